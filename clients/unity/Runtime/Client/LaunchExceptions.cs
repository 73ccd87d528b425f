#nullable enable
// Why SidecarProcess.LaunchAsync failed. Every kind carries the tail of the
// sidecar's stderr (its JSON log lines), mirroring sidecar.client's
// LaunchError tree and the C++ LaunchError kinds.
using System;

namespace GameSidecar.Client
{
    /// <summary>The sidecar could not be started. <see cref="StderrTail"/> holds its last stderr lines.</summary>
    public class SidecarLaunchException : Exception
    {
        /// <summary>The sidecar's last stderr lines (its JSON log), or "" when none were read.</summary>
        public string StderrTail { get; }

        /// <summary>The process that was started (and is gone now), or null when none was.</summary>
        public int? ProcessId { get; internal set; }

        /// <summary>Builds it; <paramref name="stderrTail"/> is appended to the message.</summary>
        public SidecarLaunchException(string message, string stderrTail, Exception? inner = null)
            : base(string.IsNullOrEmpty(stderrTail) ? message : message + "\n--- sidecar stderr (tail) ---\n" + stderrTail, inner)
        {
            StderrTail = stderrTail;
        }
    }

    /// <summary>The process ended (or closed stdout) before writing its handshake line.</summary>
    public class SidecarExitedBeforeHandshakeException : SidecarLaunchException
    {
        /// <summary>The exit code, or null when it did not exit within the wait.</summary>
        public int? ExitCode { get; }

        /// <summary>Builds it for an exit with <paramref name="exitCode"/> (null: unknown); <paramref name="why"/> replaces the default message.</summary>
        public SidecarExitedBeforeHandshakeException(int? exitCode, string stderrTail, string? why = null)
            : base(why ?? $"sidecar exited before handshake (exit code {(exitCode.HasValue ? exitCode.Value.ToString() : "unknown")})", stderrTail)
        {
            ExitCode = exitCode;
        }
    }

    /// <summary>
    /// Exit code 3: another sidecar holds the --state-dir lock (two game instances
    /// pointed at one save folder). Stop the other one or use another state dir.
    /// </summary>
    public sealed class SidecarStateDirLockedException : SidecarExitedBeforeHandshakeException
    {
        /// <summary>The exit code the sidecar uses for a held --state-dir lock.</summary>
        public const int ExitCodeValue = 3;

        /// <summary>Builds it with the sidecar's stderr tail.</summary>
        public SidecarStateDirLockedException(string stderrTail)
            : base(ExitCodeValue, stderrTail, "sidecar exited before handshake: another sidecar holds the --state-dir lock (exit code 3)")
        {
        }
    }

    /// <summary>The first stdout line was not a protocol-1 game-sidecar handshake.</summary>
    public sealed class SidecarMalformedHandshakeException : SidecarLaunchException
    {
        /// <summary>The line that came instead of a handshake.</summary>
        public string Line { get; }

        /// <summary>Builds it for <paramref name="line"/>, saying <paramref name="why"/> it is not a handshake.</summary>
        public SidecarMalformedHandshakeException(string line, string why, string stderrTail)
            : base($"malformed handshake ({why}): {Clip(line)}", stderrTail)
        {
            Line = line;
        }

        private static string Clip(string line) => line.Length > 200 ? line.Substring(0, 200) + "..." : line;
    }

    /// <summary>No handshake within the timeout; the process was killed.</summary>
    public sealed class SidecarHandshakeTimeoutException : SidecarLaunchException
    {
        /// <summary>How long the launch waited.</summary>
        public TimeSpan Timeout { get; }

        /// <summary>Builds it for a wait of <paramref name="timeout"/>.</summary>
        public SidecarHandshakeTimeoutException(TimeSpan timeout, string stderrTail)
            : base($"no handshake within {timeout.TotalSeconds:0.0} s", stderrTail)
        {
            Timeout = timeout;
        }
    }

    /// <summary>
    /// No usable HTTP/2 handler: on netstandard2.1 (Unity) with no HttpHandlerFactory set. Thrown by
    /// SidecarProcess.LaunchAsync before the process is started; the message names the fix
    /// (Cysharp's YetAnotherHttpHandler through SidecarHost.HttpHandlerFactory or
    /// SidecarClientOptions.HttpHandlerFactory, docs/unity.md section 3).
    /// </summary>
    public sealed class SidecarNoHttpHandlerException : SidecarLaunchException
    {
        /// <summary>Builds it with the message naming the fix.</summary>
        public SidecarNoHttpHandlerException(string message) : base(message, "") { }
    }
}
