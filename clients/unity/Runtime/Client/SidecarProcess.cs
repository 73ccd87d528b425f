#nullable enable
// Launching the sidecar the way a game does (docs/protocol.md §1) and supervising it:
// one SidecarInstance per process; the exit is observable (Exited, ProcessExited,
// StatusChanged); a hung sidecar is declared gone (LivenessMonitor); with a
// RestartPolicy an exit the game did not ask for is followed by a relaunch with the
// same options, a swap of the client's channel and the resumption of tracked sessions.
// Stdin stays open as the lifeline: when the game dies the OS closes it and the
// sidecar exits by itself.
using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;

namespace GameSidecar.Client
{
    /// <summary>A launched sidecar: its handshake, client, status and exit; stops it on StopAsync or dispose.</summary>
    public sealed class SidecarProcess : IAsyncDisposable
    {
        /// <summary>The environment variable a sidecar must find (with <see cref="MagicValue"/>) to serve.</summary>
        public const string MagicEnv = "GAME_SIDECAR_MAGIC";
        /// <summary>The value of <see cref="MagicEnv"/>.</summary>
        public const string MagicValue = "game-sidecar-v1";
        /// <summary>The environment variable that carries the per-launch token.</summary>
        public const string TokenEnv = "GAME_SIDECAR_TOKEN";

        private readonly SidecarProcessOptions _options;
        private readonly SidecarClient _client;
        private readonly object _sync = new object();
        private readonly TaskCompletionSource<SidecarExit> _exited =
            new TaskCompletionSource<SidecarExit>(TaskCreationOptions.RunContinuationsAsynchronously);
        private readonly CancellationTokenSource _stopping = new CancellationTokenSource();
        private readonly Queue<DateTime> _restartTimes = new Queue<DateTime>();
        private SidecarInstance _instance;
        private LivenessMonitor? _liveness;
        private SidecarStatus _status = SidecarStatus.Ready;
        private int _restarts;
        private Task<SidecarExit>? _stop;

        private SidecarProcess(SidecarProcessOptions options, SidecarInstance instance)
        {
            _options = options;
            _instance = instance;
            _client = new SidecarClient(instance.Handshake, instance.Token, options.Client, new Lifeline(this, instance));
            Attach(instance, _client.Connection);
            _ = Task.Run(SuperviseAsync);
        }

        /// <summary>The current process's handshake (a new one after a restart).</summary>
        public Handshake Handshake => _instance.Handshake;
        /// <summary>The token to send: the one chosen here, or the one the handshake reported.</summary>
        public string Token => _instance.Token;
        /// <summary>The current process's ID.</summary>
        public int Pid => _instance.Pid;
        /// <summary>True once the current process has ended (false again after a restart).</summary>
        public bool HasExited => _instance.PollExited();
        /// <summary>A client for this sidecar, disposed with the process. It survives restarts: the
        /// same object talks to the relaunched process.</summary>
        public SidecarClient Client => _client;
        /// <summary>The last stderr lines of the current process, newline-joined.</summary>
        public string StderrTail() => _instance.StderrTail();

        // For the tests that check a restart leaves the old process's objects to the collector.
        internal SidecarInstance CurrentInstance => _instance;
        internal LivenessMonitor? Liveness => _liveness;

        /// <summary>Starting, Ready, Restarting, Stopped or Failed.</summary>
        public SidecarStatus Status
        {
            get
            {
                lock (_sync) return _status;
            }
        }

        /// <summary>Raised (on a thread-pool thread) on every status change.</summary>
        public event Action<SidecarStatus>? StatusChanged;

        /// <summary>Raised (on a thread-pool thread) each time a sidecar process ends, restarted or not.</summary>
        public event Action<SidecarExit>? ProcessExited;

        /// <summary>Raised (on a thread-pool thread) after a supervised restart is serving and the tracked
        /// sessions were resumed; says whether sessions were lost and what became of unacknowledged batches.</summary>
        public event Action<RestartOutcome>? Restarted;

        /// <summary>
        /// Resolves with the last exit: when the game stopped the sidecar (Status Stopped), or when it
        /// ended and will not be restarted (Status Failed: no RestartPolicy, or the policy is exhausted).
        /// </summary>
        public Task<SidecarExit> Exited => _exited.Task;

        /// <summary>
        /// Spawns the sidecar and waits for its handshake. Throws
        /// SidecarExitedBeforeHandshakeException (SidecarStateDirLockedException for exit code 3),
        /// SidecarMalformedHandshakeException, SidecarHandshakeTimeoutException, or
        /// SidecarLaunchException when the executable cannot be started, and
        /// SidecarNoHttpHandlerException (before anything is started) on netstandard2.1 without
        /// SidecarClientOptions.HttpHandlerFactory. A failed launch leaves no process behind.
        /// </summary>
        public static async Task<SidecarProcess> LaunchAsync(SidecarProcessOptions? options = null,
            CancellationToken cancellationToken = default)
        {
            options ??= new SidecarProcessOptions();
            // Before the process starts: without a handler the first call would fail, after a launch for nothing.
            SidecarTransport.EnsureHandler(options.Client);
            var instance = await SidecarInstance.StartAsync(options, cancellationToken).ConfigureAwait(false);
            return new SidecarProcess(options, instance);
        }

        /// <summary>
        /// Closes stdin (the sidecar exits within 1 s on EOF), waits ExitGrace, then SIGTERM and
        /// SIGKILL; a sidecar the liveness check already finds unresponsive is SIGKILLed at once.
        /// Ends a restart in progress. Returns how the sidecar ended, truthfully: a sidecar that had
        /// already died reports that exit (Requested false). Idempotent: later calls return the first result.
        /// </summary>
        public Task<SidecarExit> StopAsync()
        {
            lock (_sync)
            {
                return _stop ??= StopOnceAsync();
            }
        }

        /// <summary>Stops the sidecar (<see cref="StopAsync"/>).</summary>
        public async ValueTask DisposeAsync()
        {
            await StopAsync().ConfigureAwait(false);
        }

        private async Task<SidecarExit> StopOnceAsync()
        {
            SidecarInstance instance;
            lock (_sync)
            {
                _stopping.Cancel();
                instance = _instance;
            }
            var liveness = _liveness;
            if (!instance.Exit.IsCompleted)
            {
                var unresponsive = liveness != null && liveness.Unanswered >= TimeSpan.FromMilliseconds(500);
                await instance.StopAsync(_options.ExitGrace, killNow: unresponsive).ConfigureAwait(false);
            }
            var exit = await _exited.Task.ConfigureAwait(false);
            _client.Dispose();
            return exit;
        }

        private async Task SuperviseAsync()
        {
            try
            {
                await SuperviseLoopAsync().ConfigureAwait(false);
            }
            catch (Exception e)
            {
                // A bug here must not leave the game waiting on a status that never changes.
                var exit = new SidecarExit(SidecarExitKind.Exited, null, null, "supervisor failed: " + e, false, false, Pid);
                _client.Connection.MarkGone(exit);
                Finish(SidecarStatus.Failed, exit);
            }
        }

        private async Task SuperviseLoopAsync()
        {
            var instance = _instance;
            while (true)
            {
                var exit = await instance.Exit.ConfigureAwait(false);
                _liveness?.Stop();
                _client.Connection.MarkGone(exit);
                Raise(ProcessExited, exit);
                if (exit.Requested || _stopping.IsCancellationRequested)
                {
                    Finish(SidecarStatus.Stopped, exit);
                    return;
                }
                if (_options.RestartPolicy == null)
                {
                    Finish(SidecarStatus.Failed, exit);
                    return;
                }
                if (!_options.RestartPolicy.TryTake(_restartTimes, DateTime.UtcNow))
                {
                    Finish(SidecarStatus.Failed, exit);
                    return;
                }
                SetStatus(SidecarStatus.Restarting);
                var next = await RelaunchAsync(exit).ConfigureAwait(false);
                if (next == null) return; // finished: stopped or failed
                instance = next;
                var outcome = await ResumeSessionsAsync(exit).ConfigureAwait(false);
                if (outcome == null) continue; // the new process ended too: handled at the top
                SetStatus(SidecarStatus.Ready);
                Raise(Restarted, outcome);
            }
        }

        /// <summary>Relaunches within the policy; swaps the client's channel. Null when it gave up.</summary>
        private async Task<SidecarInstance?> RelaunchAsync(SidecarExit cause)
        {
            var policy = _options.RestartPolicy!;
            var last = cause;
            var failedInARow = 0;
            while (true)
            {
                // The first attempt was counted by the caller; a failed launch counts as another.
                if (failedInARow > 0 && !policy.TryTake(_restartTimes, DateTime.UtcNow))
                {
                    Finish(SidecarStatus.Failed, last);
                    return null;
                }
                SidecarInstance next;
                try
                {
                    await Task.Delay(policy.Backoff(failedInARow), _stopping.Token).ConfigureAwait(false);
                    next = await SidecarInstance.StartAsync(_options, _stopping.Token).ConfigureAwait(false);
                }
                catch (OperationCanceledException)
                {
                    Finish(SidecarStatus.Stopped, last);
                    return null;
                }
                catch (SidecarLaunchException e)
                {
                    failedInARow++;
                    last = new SidecarExit(SidecarExitKind.Exited, (e as SidecarExitedBeforeHandshakeException)?.ExitCode, null,
                        e.StderrTail, false, false, e.ProcessId ?? 0);
                    Raise(ProcessExited, last);
                    continue;
                }
                catch (Exception e) when (e is System.IO.IOException || e is InvalidOperationException || e is System.ComponentModel.Win32Exception)
                {
                    // The OS refused (out of descriptors or processes): a failed launch like any other.
                    failedInARow++;
                    last = new SidecarExit(SidecarExitKind.Exited, null, null, e.Message, false, false);
                    continue;
                }
                var connection = new SidecarConnection(next.Handshake, next.Token, _options.Client, new Lifeline(this, next));
                bool stopped;
                lock (_sync)
                {
                    stopped = _stopping.IsCancellationRequested;
                    if (!stopped)
                    {
                        _instance = next;
                        _restarts++;
                    }
                }
                if (stopped)
                {
                    connection.Dispose();
                    Finish(SidecarStatus.Stopped, await next.StopAsync(_options.ExitGrace, killNow: false).ConfigureAwait(false));
                    return null;
                }
                _client.Swap(connection);
                Attach(next, connection);
                return next;
            }
        }

        /// <summary>Re-opens the tracked sessions and resends their unacknowledged batches; null when the
        /// new process ended meanwhile (the supervisor then handles that exit).</summary>
        private async Task<RestartOutcome?> ResumeSessionsAsync(SidecarExit cause)
        {
            var lost = new List<string>();
            var resent = new List<ResentBatch>();
            foreach (var session in _client.TrackedSessions)
            {
                try
                {
                    var (wasLost, batch) = await session.ResumeAsync(_stopping.Token).ConfigureAwait(false);
                    if (wasLost) lost.Add(session.SessionId);
                    if (batch != null) resent.Add(batch);
                }
                catch (SidecarGoneException)
                {
                    return null;
                }
                catch (OperationCanceledException)
                {
                    return null;
                }
                catch (SidecarException)
                {
                    lost.Add(session.SessionId);
                }
            }
            return new RestartOutcome(cause, _restarts, !HasStateDir(_options) || lost.Count > 0, lost, resent);
        }

        private void Attach(SidecarInstance instance, SidecarConnection connection)
        {
            // Synchronously on the exit, before anything awaits it: in-flight calls end at once.
            instance.OnExit = connection.MarkGone;
            if (instance.Exit.IsCompleted) connection.MarkGone(instance.Exit.Result);
            _liveness = LivenessMonitor.Start(instance, connection, _options, _stopping.Token);
        }

        private void Finish(SidecarStatus status, SidecarExit exit)
        {
            SetStatus(status);
            _exited.TrySetResult(exit);
        }

        private void SetStatus(SidecarStatus status)
        {
            lock (_sync)
            {
                if (_status == status) return;
                _status = status;
            }
            Raise(StatusChanged, status);
        }

        private static void Raise<T>(Action<T>? handler, T value)
        {
            if (handler == null) return;
            try
            {
                handler(value);
            }
            catch (Exception)
            {
                // A game's handler must not stop the supervision.
            }
        }

        private static bool HasStateDir(SidecarProcessOptions options)
        {
            foreach (var arg in options.Arguments)
            {
                if (arg == "--state-dir" || arg.StartsWith("--state-dir=", StringComparison.Ordinal)) return true;
            }
            return false;
        }

        /// <summary>What a connection asks after a broken call: did this process end (or is it being declared hung)?</summary>
        private sealed class Lifeline : ISidecarLifeline
        {
            // Long enough for a loaded machine to reap a killed process; a broken call whose process
            // lives on (rare: the connection alone failed) is reported this much later.
            private static readonly TimeSpan ExitPoll = TimeSpan.FromSeconds(1);
            private readonly SidecarProcess _owner;
            private readonly SidecarInstance _instance;

            public Lifeline(SidecarProcess owner, SidecarInstance instance)
            {
                _owner = owner;
                _instance = instance;
            }

            public bool Restarts => _owner._options.RestartPolicy != null && !_owner._stopping.IsCancellationRequested
                && _owner.Status != SidecarStatus.Failed;

            public async Task ProbeAsync(SidecarConnection connection)
            {
                // A killed process's socket closes as it dies; the runtime's exit event comes ~100 ms
                // later. Asking the OS directly notices it within milliseconds.
                var waited = System.Diagnostics.Stopwatch.StartNew();
                var exited = false;
                while (connection.Exit == null && waited.Elapsed < ExitPoll)
                {
                    if (_instance.PollExited())
                    {
                        exited = true; // noted here or by another thread that is finishing the record
                        break;
                    }
                    await Task.Delay(5).ConfigureAwait(false);
                }
                if (exited || connection.Exit != null || _instance.Exit.IsCompleted || _instance.LooksDead())
                {
                    // Dead: wait for the runtime to reap it (polling, as its own notice can lag).
                    var reap = System.Diagnostics.Stopwatch.StartNew();
                    while (!_instance.Exit.IsCompleted && !_instance.PollExited() && reap.Elapsed < TimeSpan.FromSeconds(10))
                        await Task.Delay(10).ConfigureAwait(false);
                    await SidecarInstance.WaitBounded(_instance.Exit, TimeSpan.FromSeconds(1)).ConfigureAwait(false);
                    return;
                }
                // Alive but not answering (the keepalive cut the connection): the liveness check is
                // about to declare it hung; wait for its verdict rather than report a plain error.
                var liveness = ReferenceEquals(_owner._instance, _instance) ? _owner._liveness : null;
                if (liveness != null && liveness.Unanswered > TimeSpan.Zero)
                    await SidecarInstance.WaitBounded(_instance.Exit, liveness.HangTimeout + TimeSpan.FromSeconds(1)).ConfigureAwait(false);
            }
        }
    }
}
