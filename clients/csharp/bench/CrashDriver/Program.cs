// CrashDriver: the C# client under scripts/bench/bench_crash_recovery.py (issue 20). It launches the
// sidecar with a RestartPolicy and a --state-dir, streams one batch at a time on a DeltaStream
// and narrates with the scripted model, kill -9s its own sidecar at random moments (N kills),
// then SIGSTOPs it (N hangs), and checks the world against a reference sidecar that received
// every acknowledged batch and never crashed. Prints one JSON object on stdout:
//   {"client":"csharp","kills","acked_ops_lost","ops_applied_twice","recover_ms_p50","recover_ms_max",
//    "hang_detect_ms_max","rss_mb_growth","fds_growth","rss_mb_samples" (RSS after each measured kill,
//    the baseline first: the orchestrator's trend), ...extra figures}
//
//   CrashDriver --sidecar EXE --kills N --hangs N --seed S [--config TOML] [--warm-kills W]
//
// rss/fds are measured from after W warm-up kills (default 80, before the N measured ones) to the
// end: CoreCLR's tiered JIT recompiles a method after 30 calls and, with its profile-guided
// optimization, again after 60, and the code of a restart runs once per restart, so the process
// keeps compiling code (and opens two descriptors per assembly the optimized code references)
// until about the 65th restart. RSS is read after an aggressive collection and malloc_trim
// (Footprint.cs says why; the JSON has the figure before the trim too). The
// figures and how they were found: docs/benchmarks.md, "Crash recovery".
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;

namespace GameSidecar.CrashDriver
{
    public static class Program
    {
        private const int SigKill = 9;
        private const int SigStop = 19;
        private const string SessionId = "crash-bench";

        [DllImport("libc", EntryPoint = "kill", SetLastError = true)]
        private static extern int Signal(int pid, int signal);

        public static async Task<int> Main(string[] args)
        {
            string? exe = null, config = null;
            int kills = 50, hangs = 10, seed = 1, warmKills = 80;
            for (var i = 0; i + 1 < args.Length; i += 2)
            {
                switch (args[i])
                {
                    case "--sidecar": exe = args[i + 1]; break;
                    case "--kills": kills = int.Parse(args[i + 1], CultureInfo.InvariantCulture); break;
                    case "--hangs": hangs = int.Parse(args[i + 1], CultureInfo.InvariantCulture); break;
                    case "--seed": seed = int.Parse(args[i + 1], CultureInfo.InvariantCulture); break;
                    case "--config": config = args[i + 1]; break;
                    case "--warm-kills": warmKills = int.Parse(args[i + 1], CultureInfo.InvariantCulture); break;
                    default:
                        Console.Error.WriteLine($"unknown argument {args[i]}");
                        return 64;
                }
            }
            if (exe == null)
            {
                Console.Error.WriteLine("usage: CrashDriver --sidecar EXE --kills N --hangs N --seed S [--config TOML] [--warm-kills W]");
                return 64;
            }
            config ??= FindConfig();
            var stateDir = Path.Combine(Path.GetTempPath(), "gs-crash-bench-" + Guid.NewGuid().ToString("N").Substring(0, 10));
            Directory.CreateDirectory(stateDir);
            try
            {
                var result = await new Bench(exe, config, stateDir, kills, hangs, seed, warmKills).RunAsync().ConfigureAwait(false);
                Console.WriteLine(result);
                return 0;
            }
            catch (TimeoutException e)
            {
                // Still one JSON object, so the bench script reports the failure instead of a parse error.
                Console.Error.WriteLine(e);
                var message = e.Message.Split('\n')[0].Replace("\\", "/").Replace("\"", "'");
                Console.WriteLine($"{{\"client\": \"csharp\", \"kills\": {kills}, \"error\": \"{message}\"}}");
                return 1;
            }
            finally
            {
                try { Directory.Delete(stateDir, recursive: true); } catch (IOException) { }
            }
        }

        private static string FindConfig()
        {
            foreach (var start in new[] { AppContext.BaseDirectory, Directory.GetCurrentDirectory() })
            {
                for (var dir = new DirectoryInfo(start); dir != null; dir = dir.Parent)
                {
                    var candidate = Path.Combine(dir.FullName, "clients", "cpp", "tests", "sidecar_test.toml");
                    if (File.Exists(candidate)) return candidate;
                }
            }
            throw new FileNotFoundException("clients/cpp/tests/sidecar_test.toml not found; pass --config");
        }

        private sealed class Bench
        {
            private readonly string _exe, _config, _stateDir;
            private readonly int _kills, _hangs, _warmKills;
            private readonly Random _random;
            // Sized up front: the driver's own bookkeeping must not grow the footprint that is measured.
            private readonly List<double> _recoverMs = new List<double>(1024);
            private readonly List<double> _goneMs = new List<double>(1024);
            private readonly List<double> _hangMs = new List<double>(1024);
            // RSS after each measured kill, the baseline first: the orchestrator's trend (its verdict).
            private readonly List<double> _rssSamples = new List<double>(1024);
            private readonly HashSet<long> _acked = new HashSet<long>(1 << 16);
            private readonly Stopwatch _clock = Stopwatch.StartNew();
            private int _restarts;
            private long _killedAt = -1; // clock ticks of the last kill not yet recovered from
            private long _goneSeenFor = -1;
            private long _stoppedAt = -1;
            private volatile bool _done;
            private volatile bool _hanging; // the pending recovery follows a SIGSTOP: timed as hang detection, not as a kill's recovery
            private bool _inRun;
            private volatile string _where = "";
            private int _runsOk, _runsGone, _resentReplayed, _resentApplied, _errors;

            public Bench(string exe, string config, string stateDir, int kills, int hangs, int seed, int warmKills)
            {
                _exe = exe;
                _config = config;
                _stateDir = stateDir;
                _kills = kills;
                _hangs = hangs;
                _warmKills = warmKills;
                _random = new Random(seed);
            }

            private double Now => _clock.Elapsed.TotalMilliseconds;

            public async Task<string> RunAsync()
            {
                var options = new SidecarProcessOptions
                {
                    Executable = _exe,
                    Arguments = new List<string> { "serve", "--config", _config, "--state-dir", _stateDir },
                    HandshakeTimeout = TimeSpan.FromSeconds(60),
                    RestartPolicy = new RestartPolicy { MaxRestarts = _warmKills + _kills + _hangs + 1, Window = TimeSpan.FromHours(1) },
                };
                await using var reference = await SidecarProcess.LaunchAsync(new SidecarProcessOptions
                {
                    Executable = _exe,
                    Arguments = new List<string> { "serve", "--config", _config },
                    HandshakeTimeout = TimeSpan.FromSeconds(60),
                }).ConfigureAwait(false);
                var sidecar = await SidecarProcess.LaunchAsync(options).ConfigureAwait(false);
                sidecar.Restarted += _ => Interlocked.Increment(ref _restarts);
                sidecar.ProcessExited += exit =>
                {
                    var stopped = Interlocked.Exchange(ref _stoppedAt, -1);
                    if (exit.Hung && stopped >= 0) lock (_hangMs) _hangMs.Add(Now - stopped / 1.0);
                };
                var client = sidecar.Client;
                var session = await client.OpenTrackedSessionAsync(SessionId).ConfigureAwait(false);
                var mirror = await reference.Client.OpenTrackedSessionAsync(SessionId).ConfigureAwait(false);
                var baseRevision = session.Revision;

                var game = Task.Run(() => GameLoopAsync(sidecar, client, session, mirror));
                // Warm up (JIT, first connections) before the baseline of memory and descriptors.
                await Task.Delay(1000).ConfigureAwait(false);
                // The baseline comes after restarts of both kinds that take the runtime to its steady
                // state (the header says why 80 kills); they count in the recovery figures.
                var warmHangs = Math.Min(1, _hangs);
                for (var k = 0; k < _warmKills; k++) await KillOnceAsync(sidecar).ConfigureAwait(false);
                for (var h = 0; h < warmHangs; h++) await HangOnceAsync(sidecar).ConfigureAwait(false);
                // .NET opens its own descriptors for stdout and stderr on first use: before the baseline.
                Console.Out.Flush();
                Console.Error.Flush();
                var before = Footprint.Take("baseline");
                if (Footprint.Tracing) Console.Error.WriteLine(before.Describe("baseline", null));
                Footprint.TraceAssemblyLoads();
                _rssSamples.Add(before.RssKb / 1024.0);
                for (var k = 0; k < _kills; k++)
                {
                    await KillOnceAsync(sidecar).ConfigureAwait(false);
                    var now = Footprint.Take();
                    _rssSamples.Add(now.RssKb / 1024.0);
                    if (Footprint.Tracing) Console.Error.WriteLine(now.Describe("kill " + (k + 1), before));
                }
                for (var h = warmHangs; h < _hangs; h++) await HangOnceAsync(sidecar).ConfigureAwait(false);
                await Task.Delay(300).ConfigureAwait(false);
                _done = true;
                await game.ConfigureAwait(false);
                var after = Footprint.Take("end");
                if (Footprint.Tracing) Console.Error.WriteLine(after.Describe("end", before));

                var got = await client.GetStateAsync(new GetStateRequest { SessionId = SessionId }).ConfigureAwait(false);
                var want = await reference.Client.GetStateAsync(new GetStateRequest { SessionId = SessionId }).ConfigureAwait(false);
                var present = new HashSet<string>(got.Snapshot.Entities.Select(e => e.Id));
                var lost = _acked.Count(n => !present.Contains(ItemId(n)));
                var applications = got.Revision - baseRevision;
                var items = present.Count(id => id.StartsWith("item/", StringComparison.Ordinal));
                var twice = Math.Max(0, applications - items);
                var exit = await sidecar.StopAsync().ConfigureAwait(false);
                if (!exit.Requested || exit.Kind != SidecarExitKind.Exited) _errors++;

                string F(double v) => v.ToString("0.0", CultureInfo.InvariantCulture);
                var recover = _recoverMs.OrderBy(x => x).ToList();
                var gone = _goneMs.OrderBy(x => x).ToList();
                return "{" + string.Join(", ", new[]
                {
                    "\"client\": \"csharp\"",
                    $"\"kills\": {_kills}",
                    $"\"acked_ops_lost\": {lost}",
                    $"\"ops_applied_twice\": {twice}",
                    $"\"recover_ms_p50\": {F(Percentile(recover, 0.5))}",
                    $"\"recover_ms_max\": {F(recover.Count == 0 ? double.NaN : recover.Max())}",
                    $"\"hang_detect_ms_max\": {F(_hangMs.Count == 0 ? double.NaN : _hangMs.Max())}",
                    $"\"warm_kills\": {_warmKills}",
                    $"\"rss_mb_growth\": {F((after.RssKb - before.RssKb) / 1024.0)}",
                    $"\"rss_mb_samples\": [{string.Join(", ", _rssSamples.Select(v => v.ToString("0.00", CultureInfo.InvariantCulture)))}]",
                    $"\"fds_growth\": {after.Fds - before.Fds}",
                    $"\"rss_untrimmed_mb_growth\": {F((after.UntrimmedRssKb - before.UntrimmedRssKb) / 1024.0)}",
                    $"\"anon_mb_growth\": {F((after.AnonKb - before.AnonKb) / 1024.0)}",
                    $"\"files_mb_growth\": {F((after.FileKb - before.FileKb) / 1024.0)}",
                    $"\"heap_mb_growth\": {F((after.HeapKb - before.HeapKb) / 1024.0)}",
                    $"\"jit_code_mb_growth\": {F((after.CodeKb - before.CodeKb) / 1024.0)}",
                    $"\"jit_methods_growth\": {after.JitMethods - before.JitMethods}",
                    $"\"gc_committed_mb\": {F(after.GcCommittedKb / 1024.0)}",
                    $"\"pipe_socket_fds_growth\": {after.PipesSockets - before.PipesSockets}",
                    $"\"hangs\": {_hangMs.Count}",
                    $"\"gone_ms_p50\": {F(Percentile(gone, 0.5))}",
                    $"\"gone_ms_max\": {F(gone.Count == 0 ? double.NaN : gone.Max())}",
                    $"\"batches_acked\": {_acked.Count}",
                    $"\"resent_replayed\": {_resentReplayed}",
                    $"\"resent_applied\": {_resentApplied}",
                    $"\"runs_ok\": {_runsOk}",
                    $"\"runs_gone\": {_runsGone}",
                    $"\"state_matches_reference\": {(want.Snapshot.Equals(got.Snapshot) ? "true" : "false")}",
                    $"\"errors\": {_errors}",
                }) + "}";
            }

            /// <summary>Waits until the sidecar is serving (after the previous restart), lets the game run a
            /// random while, then kill -9s it; returns once the restart is done.</summary>
            private async Task KillOnceAsync(SidecarProcess sidecar)
            {
                var before = Volatile.Read(ref _restarts);
                await Task.Delay(_random.Next(50, 500)).ConfigureAwait(false);
                Interlocked.Exchange(ref _killedAt, _clock.ElapsedTicks);
                Signal(sidecar.Pid, SigKill);
                await WaitAsync(sidecar, () => Volatile.Read(ref _restarts) > before && Volatile.Read(ref _killedAt) < 0, 60).ConfigureAwait(false);
            }

            /// <summary>SIGSTOPs the sidecar; the liveness check must declare it hung and the policy restart it.</summary>
            private async Task HangOnceAsync(SidecarProcess sidecar)
            {
                var before = Volatile.Read(ref _restarts);
                await Task.Delay(_random.Next(50, 500)).ConfigureAwait(false);
                var pid = sidecar.Pid;
                _hanging = true;
                Interlocked.Exchange(ref _stoppedAt, (long)Now);
                Interlocked.Exchange(ref _killedAt, _clock.ElapsedTicks);
                Signal(pid, SigStop);
                await WaitAsync(sidecar, () => Volatile.Read(ref _restarts) > before && Volatile.Read(ref _killedAt) < 0, 60).ConfigureAwait(false);
                _hanging = false;
            }

            private async Task GameLoopAsync(SidecarProcess sidecar, SidecarClient client, TrackedSession session, TrackedSession mirror)
            {
                long n = 0;
                var resend = new List<StreamDeltasRequest>();
                DeltaStream? stream = null;
                while (!_done)
                {
                    try
                    {
                        _where = "top";
                        if (stream == null)
                        {
                            // Wait for the restart (and the tracked session's resumption) instead of spinning on calls that fail at once.
                            if (sidecar.Status != SidecarStatus.Ready) { await Task.Delay(5).ConfigureAwait(false); continue; }
                            _where = "open stream";
                            stream = client.StreamDeltas();
                        }
                        foreach (var again in resend.ToList())
                        {
                            _where = "resend " + again.DeltaId;
                            var answer = await stream.ApplyAsync(again).ConfigureAwait(false);
                            if (answer.Replayed) _resentReplayed++; else _resentApplied++;
                            await Acked(again, mirror).ConfigureAwait(false);
                            resend.Remove(again);
                        }
                        n++;
                        var request = new StreamDeltasRequest { SessionId = SessionId, BaseRevision = session.Revision, DeltaId = "b" + n };
                        request.Ops.Add(new DeltaOp
                        {
                            UpsertEntity = new UpsertEntityOp { Entity = new Entity { Id = ItemId(n), Kind = EntityKind.Item, Name = "crate " + n } },
                        });
                        _where = "apply " + request.DeltaId + " on " + client.Endpoint + " pid " + sidecar.Pid;
                        using (var stall = new CancellationTokenSource(TimeSpan.FromSeconds(20)))
                        {
                            try
                            {
                                await stream.ApplyAsync(request, stall.Token).ConfigureAwait(false);
                            }
                            catch (OperationCanceledException) when (stall.IsCancellationRequested)
                            {
                                Console.Error.WriteLine($"crash driver: no answer to {request.DeltaId} in 20 s ({_where}, status {sidecar.Status}, " +
                                    $"unacknowledged {stream.Unacknowledged.Count}); sidecar stderr tail:\n{sidecar.StderrTail()}");
                                throw;
                            }
                        }
                        _where = "mirror " + request.DeltaId;
                        await Acked(request, mirror).ConfigureAwait(false);
                        if (n % 8 == 0)
                        {
                            _inRun = true;
                            _where = "run";
                            await foreach (var _ in client.Narrate(SessionId, "Wren looks around.").ConfigureAwait(false)) { }
                            _inRun = false;
                            _runsOk++;
                        }
                    }
                    catch (SidecarGoneException e)
                    {
                        _where = "gone: " + e.Message;
                        var killed = Volatile.Read(ref _killedAt);
                        if (killed >= 0 && Interlocked.Exchange(ref _goneSeenFor, killed) != killed && !e.Exit.Hung)
                            _goneMs.Add((_clock.ElapsedTicks - killed) * 1000.0 / Stopwatch.Frequency);
                        if (_inRun) _runsGone++;
                        _inRun = false;
                        if (stream != null)
                        {
                            foreach (var unanswered in stream.Unacknowledged)
                                if (!resend.Contains(unanswered)) resend.Add(unanswered);
                            await stream.DisposeAsync().ConfigureAwait(false);
                            stream = null;
                        }
                    }
                    catch (Exception e) when (!(e is SidecarGoneException))
                    {
                        // Anything else is a finding: counted and shown, and the loop goes on.
                        _errors++;
                        _inRun = false;
                        Console.Error.WriteLine("crash driver: " + e);
                        if (stream != null) { await stream.DisposeAsync().ConfigureAwait(false); stream = null; }
                        await Task.Delay(20).ConfigureAwait(false);
                    }
                }
                if (stream != null)
                {
                    await stream.CompleteAsync().ConfigureAwait(false);
                    await stream.DisposeAsync().ConfigureAwait(false);
                }
            }

            /// <summary>An acknowledged batch: into the reference, and the first success after a kill ends its recovery.</summary>
            private async Task Acked(StreamDeltasRequest request, TrackedSession mirror)
            {
                var killed = Interlocked.Exchange(ref _killedAt, -1);
                if (killed >= 0 && !_hanging) _recoverMs.Add((_clock.ElapsedTicks - killed) * 1000.0 / Stopwatch.Frequency);
                var number = long.Parse(request.DeltaId.Substring(1), CultureInfo.InvariantCulture);
                if (_acked.Add(number)) await mirror.ApplyAsync(request.Ops, request.DeltaId).ConfigureAwait(false);
                else _errors++; // acknowledged twice by the crashing sidecar: a replay must not come back as new
            }

            private static string ItemId(long n) => "item/" + n;

            private async Task WaitAsync(SidecarProcess sidecar, Func<bool> condition, int seconds)
            {
                var limit = Stopwatch.StartNew();
                while (!condition())
                {
                    if (limit.Elapsed > TimeSpan.FromSeconds(seconds))
                        throw new TimeoutException($"the sidecar did not recover within {seconds} s: status {sidecar.Status}, " +
                            $"pid {sidecar.Pid}, restarts {_restarts}, waiting for an ack since {_killedAt}, game loop at: {_where}\n" +
                            "sidecar stderr tail:\n" + sidecar.StderrTail());
                    await Task.Delay(5).ConfigureAwait(false);
                }
            }

            private static double Percentile(List<double> sorted, double p) =>
                sorted.Count == 0 ? double.NaN : sorted[Math.Min(sorted.Count - 1, (int)Math.Floor(p * sorted.Count))];
        }
    }
}
