// A supervised restart must leave nothing of the old process behind in the game: its
// Process object, its channel (and the SocketsHttpHandler under it), its connection and
// its liveness check all become garbage, and the old process's descriptors are closed.
// scripts/bench/bench_crash_recovery.py measures the footprint over 50 kills; these pin the
// retentions that would make it grow, one restart at a time.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Runtime.CompilerServices;
using System.Threading.Tasks;
using GameSidecar.Client;
using Xunit;

namespace GameSidecar.Client.Tests
{
    public class RetentionTests
    {
        private static SidecarProcessOptions Options(string tmp)
        {
            var options = TestEnv.RealOptions();
            options.Environment["TMPDIR"] = tmp;
            options.RestartPolicy = new RestartPolicy { MaxRestarts = 3, InitialBackoff = TimeSpan.FromMilliseconds(50) };
            return options;
        }

        private static string FreshDir()
        {
            var dir = Path.Combine(Path.GetTempPath(), "gs-cs-test-" + Guid.NewGuid().ToString("N").Substring(0, 10));
            Directory.CreateDirectory(dir);
            return dir;
        }

        /// <summary>Weak references to what belongs to the current process only. Not inlined, and not in
        /// the async test method: a local there lives in the state machine and would keep them alive.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static Dictionary<string, WeakReference> Watch(SidecarProcess sidecar)
        {
            var connection = sidecar.Client.Connection;
            var watched = new Dictionary<string, WeakReference>
            {
                ["instance"] = new WeakReference(sidecar.CurrentInstance),
                ["process"] = new WeakReference(sidecar.CurrentInstance.Process),
                ["connection"] = new WeakReference(connection),
                ["channel"] = new WeakReference(connection.Channel),
            };
            if (sidecar.Liveness != null) watched["liveness monitor"] = new WeakReference(sidecar.Liveness);
            return watched;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static string[] StillAlive(Dictionary<string, WeakReference> watched)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
            return watched.Where(kv => kv.Value.IsAlive).Select(kv => kv.Key).ToArray();
        }

        [Fact]
        public async Task ARestartLeavesTheOldProcessChannelAndLivenessCheckToTheCollector()
        {
            var tmp = FreshDir();
            try
            {
                var restarted = new TaskCompletionSource<RestartOutcome>(TaskCreationOptions.RunContinuationsAsynchronously);
                await using var sidecar = await SidecarProcess.LaunchAsync(Options(tmp));
                sidecar.Restarted += o => restarted.TrySetResult(o);
                await sidecar.Client.GetInfoAsync();
                var first = sidecar.Pid;
                var watched = Watch(sidecar);
                Assert.Equal(5, watched.Count);

                Assert.Equal(0, TestEnv.Signal(first, TestEnv.SigKill));
                await restarted.Task.WaitAsync(TimeSpan.FromSeconds(60));
                await sidecar.Client.GetInfoAsync(); // the new process serves

                string[] alive = Array.Empty<string>();
                Assert.True(await TestEnv.Eventually(() => (alive = StillAlive(watched)).Length == 0),
                    "still reachable after the restart: " + string.Join(", ", alive));
            }
            finally
            {
                try { Directory.Delete(tmp, recursive: true); } catch (IOException) { }
            }
        }
    }
}
