#nullable enable
using System;
using System.Collections.Generic;
using System.Net.Http;

namespace GameSidecar.Client
{
    /// <summary>How to launch the sidecar (mirrors the C++ SidecarOptions and the Python launch() arguments).</summary>
    public sealed class SidecarProcessOptions
    {
        /// <summary>The frozen sidecar or console script, or a Python interpreter with
        /// Arguments {"-m", "sidecar", "serve"}. Searched in PATH when it holds no directory.</summary>
        public string Executable { get; set; } = "game-sidecar";

        /// <summary>Arguments after the executable; default {"serve"}. Add "--config", "--state-dir", "--listen" here.</summary>
        public IList<string> Arguments { get; set; } = new List<string> { "serve" };

        /// <summary>The per-launch secret. Null = a random 256-bit token made here; it reaches
        /// the sidecar through GAME_SIDECAR_TOKEN and is never written on a pipe.</summary>
        public string? Token { get; set; }

        /// <summary>Extra environment, added to (and overriding) the game's own. It may override
        /// GAME_SIDECAR_MAGIC (tests do); GAME_SIDECAR_TOKEN comes from <see cref="Token"/> only.</summary>
        public IDictionary<string, string> Environment { get; set; } = new Dictionary<string, string>();

        /// <summary>Working directory of the sidecar; null = the game's.</summary>
        public string? WorkingDirectory { get; set; }

        /// <summary>How long to wait for the handshake line.</summary>
        public TimeSpan HandshakeTimeout { get; set; } = TimeSpan.FromSeconds(15);

        /// <summary>After stdin is closed, how long the sidecar gets to exit on its own
        /// (it promises to within 1 s) before it is killed.</summary>
        public TimeSpan ExitGrace { get; set; } = TimeSpan.FromSeconds(1);

        /// <summary>Lines of stderr kept for error reports and SidecarExit.StderrTail.</summary>
        public int StderrTailLines { get; set; } = 20;

        /// <summary>Relaunch the sidecar after an exit the game did not ask for; null (the default) = never.
        /// Pass --state-dir in Arguments for sessions to survive the restart.</summary>
        public RestartPolicy? RestartPolicy { get; set; }

        /// <summary>How often the liveness check (a GetInfo call) runs.</summary>
        public TimeSpan LivenessInterval { get; set; } = TimeSpan.FromSeconds(1);

        /// <summary>A sidecar that answers nothing for this long (SIGSTOP, a deadlock) is declared hung,
        /// killed, and handled as an exit (SidecarExit.Hung). Zero turns the liveness check off.</summary>
        public TimeSpan HangTimeout { get; set; } = TimeSpan.FromSeconds(3);

        /// <summary>Called with each stderr line (the sidecar's JSON log lines) on a
        /// reader thread: it must be thread-safe and quick.</summary>
        public Action<string>? OnLog { get; set; }

        /// <summary>Builds the HTTP/2 handler for the client (see SidecarClientOptions.HttpHandlerFactory).</summary>
        public SidecarClientOptions Client { get; set; } = new SidecarClientOptions();
    }

    /// <summary>How SidecarClient talks to the sidecar.</summary>
    public sealed class SidecarClientOptions
    {
        /// <summary>Deadline of each unary call; null = none. Runs and DeltaStreams have none
        /// (cancel them instead, or set GenerationLimits.TotalTimeoutMs).</summary>
        public TimeSpan? CallTimeout { get; set; } = TimeSpan.FromSeconds(30);

        /// <summary>Largest message accepted (ExportSession blobs, GetState snapshots).</summary>
        public int MaxReceiveBytes { get; set; } = 64 * 1024 * 1024;

        /// <summary>
        /// Makes the HTTP/2 handler for a handshake. Null = the built-in one: on .NET 5+
        /// a SocketsHttpHandler (Unix socket through its ConnectCallback, or TCP). Unity
        /// plugs in a handler that works there, e.g. Cysharp's YetAnotherHttpHandler with
        /// Http2Only = true and UnixDomainSocketPath = handshake.Address (docs/unity.md).
        /// </summary>
        public Func<Handshake, HttpMessageHandler>? HttpHandlerFactory { get; set; }

        /// <summary>Whether the built-in handler may be used when no factory is set: true on .NET 5+, false on
        /// netstandard2.1. A seam for the tests (the netstandard2.1 rule, exercised from net10.0).</summary>
        internal bool BuiltInHandler { get; set; } = SidecarTransport.HasBuiltInHandler;

        /// <summary>HTTP/2 keepalive of the built-in handler (.NET 5+): a PING after this long without a
        /// frame from the sidecar, calls or not. Zero = off. Kept at 1 s or more (the sidecar's ping policy).</summary>
        public TimeSpan KeepAlivePingDelay { get; set; } = TimeSpan.FromSeconds(1);

        /// <summary>How long a keepalive PING may go unanswered before the connection is dropped.</summary>
        public TimeSpan KeepAlivePingTimeout { get; set; } = TimeSpan.FromSeconds(2);
    }
}
