#nullable enable
// Why SidecarProcess.LaunchAsync failed. Every kind carries the tail of the
// sidecar's stderr (its JSON log lines), mirroring sidecar/client.py's
// LaunchError tree and the C++ LaunchError kinds.
using System;

namespace GameSidecar.Client
{
    /// <summary>The sidecar could not be started. <see cref="StderrTail"/> holds its last stderr lines.</summary>
    public class SidecarLaunchException : Exception
    {
        public string StderrTail { get; }

        /// <summary>The process that was started (and is gone now), or null when none was.</summary>
        public int? ProcessId { get; internal set; }

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
        public const int ExitCodeValue = 3;

        public SidecarStateDirLockedException(string stderrTail)
            : base(ExitCodeValue, stderrTail, "sidecar exited before handshake: another sidecar holds the --state-dir lock (exit code 3)")
        {
        }
    }

    /// <summary>The first stdout line was not a protocol-1 game-sidecar handshake.</summary>
    public sealed class SidecarMalformedHandshakeException : SidecarLaunchException
    {
        public string Line { get; }

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
        public TimeSpan Timeout { get; }

        public SidecarHandshakeTimeoutException(TimeSpan timeout, string stderrTail)
            : base($"no handshake within {timeout.TotalSeconds:0.0} s", stderrTail)
        {
            Timeout = timeout;
        }
    }
}
