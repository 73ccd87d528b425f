#nullable enable
// What the game learns when the sidecar ends (issue 20, CRASH_DESIGN.md): the exit
// record, the status, the restart policy and what a restart did. The same names as
// the Python and C++ clients.
using System;
using System.Collections.Generic;

namespace GameSidecar.Client
{
    /// <summary>How the sidecar ended.</summary>
    public enum SidecarExitKind
    {
        /// <summary>Ended by itself with an exit code (after stdin closed, or on its own).</summary>
        Exited,
        /// <summary>Killed by this client: the stop's grace ran out, or it was declared hung.</summary>
        Killed,
        /// <summary>Ended by a signal this client did not send (kill -9 from outside, a crash, the OOM killer).</summary>
        Signaled,
    }

    /// <summary>The lifecycle of a launched sidecar, as <see cref="SidecarProcess.StatusChanged"/> reports it.</summary>
    public enum SidecarStatus
    {
        /// <summary>Launched, waiting for the handshake.</summary>
        Starting,
        /// <summary>Handshaken and answering calls.</summary>
        Ready,
        /// <summary>It ended without being asked to; the restart policy is relaunching it.</summary>
        Restarting,
        /// <summary>Stopped because the game asked (StopAsync / dispose).</summary>
        Stopped,
        /// <summary>It ended without being asked to and will not come back (no policy, or the policy is exhausted).</summary>
        Failed,
    }

    /// <summary>One ended sidecar process: how it ended, its last stderr lines, and whether the game asked for it.</summary>
    public sealed class SidecarExit
    {
        /// <summary>Builds an exit record (the launcher makes these; public for tests and tools).</summary>
        public SidecarExit(SidecarExitKind kind, int? exitCode, int? signal, string stderrTail, bool requested, bool hung, int pid = 0)
        {
            Kind = kind;
            ExitCode = exitCode;
            Signal = signal;
            StderrTail = stderrTail;
            Requested = requested;
            Hung = hung;
            Pid = pid;
        }

        /// <summary>Exited by itself, killed by this client, or ended by someone else's signal.</summary>
        public SidecarExitKind Kind { get; }
        /// <summary>The exit code; null when a signal ended it.</summary>
        public int? ExitCode { get; }
        /// <summary>The signal that ended it (POSIX); null when it exited, and always on Windows.</summary>
        public int? Signal { get; }
        /// <summary>The last stderr lines (at most SidecarProcessOptions.StderrTailLines), newline-joined.</summary>
        public string StderrTail { get; }
        /// <summary>True when the game asked for the stop (StopAsync or dispose).</summary>
        public bool Requested { get; }
        /// <summary>True when the liveness check found it unresponsive and this client killed it.</summary>
        public bool Hung { get; }
        /// <summary>The process ID it had.</summary>
        public int Pid { get; }

        /// <summary>"killed by signal 9 (SIGKILL), not requested; last stderr: ..." and the like.</summary>
        public override string ToString()
        {
            var how = ExitCode.HasValue
                ? $"exited with code {ExitCode.Value}"
                : Signal.HasValue ? $"{(Kind == SidecarExitKind.Killed ? "killed by this client with" : "killed by")} signal {Signal.Value} ({SignalName(Signal.Value)})"
                : Kind.ToString().ToLowerInvariant();
            var text = how + (Hung ? ", declared hung" : "") + (Requested ? ", requested" : ", not requested");
            var last = LastLine(StderrTail);
            return last.Length == 0 ? text : text + "; last stderr: " + last;
        }

        /// <summary>"SIGKILL" for 9 and so on; "SIG?" for a number not named here.</summary>
        public static string SignalName(int signal) => signal switch
        {
            1 => "SIGHUP",
            2 => "SIGINT",
            3 => "SIGQUIT",
            4 => "SIGILL",
            6 => "SIGABRT",
            8 => "SIGFPE",
            9 => "SIGKILL",
            11 => "SIGSEGV",
            13 => "SIGPIPE",
            14 => "SIGALRM",
            15 => "SIGTERM",
            _ => "SIG?",
        };

        private static string LastLine(string tail)
        {
            var trimmed = tail.TrimEnd();
            var cut = trimmed.LastIndexOf('\n');
            var line = cut < 0 ? trimmed : trimmed.Substring(cut + 1);
            return line.Length > 300 ? line.Substring(0, 300) + "..." : line;
        }
    }

    /// <summary>
    /// Opt-in supervised restart (SidecarProcessOptions.RestartPolicy): after an exit the game did not
    /// ask for, relaunch with the same options (and --state-dir), at most <see cref="MaxRestarts"/> times
    /// within <see cref="Window"/>, waiting <see cref="InitialBackoff"/> doubled per consecutive failure up
    /// to <see cref="MaxBackoff"/>. No policy = no restart.
    /// </summary>
    public sealed class RestartPolicy
    {
        /// <summary>Restarts allowed within <see cref="Window"/> (default 3).</summary>
        public int MaxRestarts { get; set; } = 3;
        /// <summary>The sliding window the restarts are counted in (default 60 s).</summary>
        public TimeSpan Window { get; set; } = TimeSpan.FromSeconds(60);
        /// <summary>Wait before the first relaunch (default 250 ms); doubled for each launch in a row that fails.</summary>
        public TimeSpan InitialBackoff { get; set; } = TimeSpan.FromMilliseconds(250);
        /// <summary>Longest wait between relaunches (default 5 s).</summary>
        public TimeSpan MaxBackoff { get; set; } = TimeSpan.FromSeconds(5);

        /// <summary>The wait before relaunch attempt number <paramref name="failedInARow"/> (0 = the first).</summary>
        internal TimeSpan Backoff(int failedInARow)
        {
            var ms = InitialBackoff.TotalMilliseconds * Math.Pow(2, Math.Min(failedInARow, 30));
            return TimeSpan.FromMilliseconds(Math.Min(ms, MaxBackoff.TotalMilliseconds));
        }

        /// <summary>True when one more restart fits in the window (and records it).</summary>
        internal bool TryTake(Queue<DateTime> history, DateTime now)
        {
            while (history.Count > 0 && now - history.Peek() > Window) history.Dequeue();
            if (history.Count >= MaxRestarts) return false;
            history.Enqueue(now);
            return true;
        }
    }

    /// <summary>What happened to a batch a tracked session had sent without an acknowledgement when the sidecar ended.</summary>
    public sealed class ResentBatch
    {
        internal ResentBatch(string sessionId, string deltaId, bool applied, bool replayed, long revision, Exception? error)
        {
            SessionId = sessionId;
            DeltaId = deltaId;
            Applied = applied;
            Replayed = replayed;
            Revision = revision;
            Error = error;
        }

        /// <summary>The tracked session.</summary>
        public string SessionId { get; }
        /// <summary>The batch's delta ID (the game's, or the one the tracker gave it).</summary>
        public string DeltaId { get; }
        /// <summary>True when the batch is in the session now, exactly once (applied by the resend, or found applied before the exit).</summary>
        public bool Applied { get; }
        /// <summary>True when the sidecar had applied it before it ended (the resend was a replay; nothing changed now).</summary>
        public bool Replayed { get; }
        /// <summary>The revision the batch made (when applied).</summary>
        public long Revision { get; }
        /// <summary>Why it was not applied (its session was lost, or the resend was refused); null when applied.</summary>
        public Exception? Error { get; }
    }

    /// <summary>What a supervised restart did (SidecarProcess.Restarted).</summary>
    public sealed class RestartOutcome
    {
        internal RestartOutcome(SidecarExit exit, int restart, bool sessionsLost, IReadOnlyList<string> lostSessions,
            IReadOnlyList<ResentBatch> resent)
        {
            Exit = exit;
            Restart = restart;
            SessionsLost = sessionsLost;
            LostSessions = lostSessions;
            Resent = resent;
        }

        /// <summary>The exit that caused the restart.</summary>
        public SidecarExit Exit { get; }
        /// <summary>1 for the first restart of this SidecarProcess, and so on.</summary>
        public int Restart { get; }
        /// <summary>
        /// True when the sidecar's sessions did not survive: it runs without --state-dir, or a tracked
        /// session came back empty or behind its acknowledged revision. Resync them with ReplaceState.
        /// </summary>
        public bool SessionsLost { get; }
        /// <summary>The tracked sessions that could not be resumed (re-opened empty: ReplaceState them).</summary>
        public IReadOnlyList<string> LostSessions { get; }
        /// <summary>Each tracked session's unacknowledged batch and what became of it.</summary>
        public IReadOnlyList<ResentBatch> Resent { get; }
    }
}
