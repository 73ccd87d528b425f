#nullable enable
// The cheap liveness check (issue 20): a GetInfo with a short deadline every interval.
// A sidecar that answers nothing for HangTimeout (SIGSTOP, a deadlock) is declared hung,
// SIGKILLed, and then handled like any other exit (exit.Hung = true). Keepalive pings on
// the channel (SidecarTransport) catch a dead connection; this catches a live socket
// whose process no longer serves, and works on runtimes without HTTP/2 keepalive.
using System;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.V1;
using Grpc.Core;

namespace GameSidecar.Client
{
    internal sealed class LivenessMonitor
    {
        private readonly SidecarInstance _instance;
        private readonly SidecarConnection _connection;
        private readonly TimeSpan _interval;
        private readonly TimeSpan _hangTimeout;
        private readonly CancellationTokenSource _stop;
        private readonly Stopwatch _unanswered = new Stopwatch();

        private LivenessMonitor(SidecarInstance instance, SidecarConnection connection, TimeSpan interval, TimeSpan hangTimeout,
            CancellationToken stop)
        {
            _instance = instance;
            _connection = connection;
            _interval = interval;
            _hangTimeout = hangTimeout;
            _stop = CancellationTokenSource.CreateLinkedTokenSource(stop, connection.GoneToken);
        }

        /// <summary>Starts watching; null when the options turn the check off (HangTimeout zero).</summary>
        public static LivenessMonitor? Start(SidecarInstance instance, SidecarConnection connection, SidecarProcessOptions options,
            CancellationToken stop)
        {
            if (options.HangTimeout <= TimeSpan.Zero) return null;
            var monitor = new LivenessMonitor(instance, connection, options.LivenessInterval, options.HangTimeout, stop);
            _ = Task.Run(monitor.RunAsync);
            return monitor;
        }

        /// <summary>How long the current check has gone unanswered (zero when none is outstanding).</summary>
        public TimeSpan Unanswered
        {
            get
            {
                lock (_unanswered) return _unanswered.Elapsed;
            }
        }

        public TimeSpan HangTimeout => _hangTimeout;

        public void Stop()
        {
            try
            {
                _stop.Cancel();
            }
            catch (ObjectDisposedException)
            {
                // Already stopped.
            }
        }

        private async Task RunAsync()
        {
            var token = _stop.Token;
            var sinceAnswer = Stopwatch.StartNew();
            try
            {
                while (!token.IsCancellationRequested)
                {
                    await Task.Delay(_interval, token).ConfigureAwait(false);
                    lock (_unanswered) _unanswered.Restart();
                    try
                    {
                        var options = new CallOptions(headers: _connection.Auth, deadline: DateTime.UtcNow + _hangTimeout,
                            cancellationToken: token);
                        using var call = _connection.Sidecar.GetInfoAsync(new GetInfoRequest(), options);
                        await call.ResponseAsync.ConfigureAwait(false);
                        sinceAnswer.Restart();
                    }
                    catch (RpcException) when (!token.IsCancellationRequested)
                    {
                        if (_instance.PollExited()) return;
                        if (sinceAnswer.Elapsed >= _hangTimeout)
                        {
                            _instance.KillHung();
                            return;
                        }
                    }
                    finally
                    {
                        lock (_unanswered) _unanswered.Reset();
                    }
                }
            }
            catch (OperationCanceledException)
            {
                // Stopped, or the process ended.
            }
            catch (ObjectDisposedException)
            {
                // The channel was closed by a stop.
            }
            finally
            {
                _stop.Dispose();
            }
        }
    }
}
