// MainThreadDispatcher delivers every run event on the thread it was given,
// through a SynchronizationContext or through a queue that thread drains.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;
using Xunit;

namespace GameSidecar.Client.Tests
{
    /// <summary>A SynchronizationContext whose posts run on one dedicated thread (like Unity's main thread).</summary>
    internal sealed class SingleThreadContext : SynchronizationContext, IDisposable
    {
        private readonly BlockingCollection<(SendOrPostCallback, object?)> _work = new BlockingCollection<(SendOrPostCallback, object?)>();
        private readonly Thread _thread;

        public SingleThreadContext()
        {
            _thread = new Thread(() =>
            {
                SetSynchronizationContext(this);
                foreach (var (callback, state) in _work.GetConsumingEnumerable()) callback(state);
            }) { IsBackground = true, Name = "fake main thread" };
            _thread.Start();
        }

        public int ThreadId => _thread.ManagedThreadId;

        public override void Post(SendOrPostCallback d, object? state) => _work.Add((d, state));

        public void Dispose()
        {
            _work.CompleteAdding();
            _thread.Join();
        }
    }

    public class DispatcherTests
    {
        private static async IAsyncEnumerable<RunEvent> Events(int n, [EnumeratorCancellation] CancellationToken ct = default)
        {
            for (var i = 1; i <= n; i++)
            {
                await Task.Yield(); // off the caller's thread, like a gRPC reader
                ct.ThrowIfCancellationRequested();
                yield return new RunEvent { Seq = (ulong)i, Text = new TextDelta { Text = $"t{i} " } };
            }
        }

        private static async IAsyncEnumerable<RunEvent> Failing()
        {
            await Task.Yield();
            yield return new RunEvent { Seq = 1 };
            throw new SidecarException(Grpc.Core.StatusCode.Unavailable, "PROVIDER_UNAVAILABLE", "down");
        }

        [Fact]
        public async Task ThroughASynchronizationContextEveryCallbackRunsOnItsThread()
        {
            using var main = new SingleThreadContext();
            var dispatcher = new MainThreadDispatcher(main);
            var threads = new ConcurrentBag<int>();
            var seqs = new List<ulong>();
            var ended = new TaskCompletionSource<Exception?>(TaskCreationOptions.RunContinuationsAsynchronously);
            await dispatcher.Pump(Events(50), e => { threads.Add(Environment.CurrentManagedThreadId); seqs.Add(e.Seq); },
                error => { threads.Add(Environment.CurrentManagedThreadId); ended.SetResult(error); });
            Assert.Null(await ended.Task);
            Assert.Equal(Enumerable.Range(1, 50).Select(i => (ulong)i), seqs);
            Assert.Equal(new[] { main.ThreadId }, threads.Distinct());
        }

        [Fact]
        public async Task QueueModeRunsNothingUntilTheOwnerDrainsThenRunsInOrderOnIt()
        {
            var dispatcher = new MainThreadDispatcher();
            var seqs = new List<ulong>();
            var threads = new HashSet<int>();
            Exception? error = new Exception("not ended");
            await dispatcher.Pump(Events(10), e => { seqs.Add(e.Seq); threads.Add(Environment.CurrentManagedThreadId); },
                e => error = e);
            Assert.Empty(seqs);
            Assert.Equal(11, dispatcher.Pending);
            Assert.Equal(4, dispatcher.Drain(max: 4)); // a frame's budget
            Assert.Equal(7, dispatcher.Drain());
            Assert.Equal(Enumerable.Range(1, 10).Select(i => (ulong)i), seqs);
            Assert.Null(error);
            Assert.Equal(new[] { Environment.CurrentManagedThreadId }, threads);
        }

        [Fact]
        public async Task AFailedRunEndsWithItsExceptionOnTheDispatcherThread()
        {
            var dispatcher = new MainThreadDispatcher();
            Exception? error = null;
            var count = 0;
            await dispatcher.Pump(Failing(), _ => count++, e => error = e);
            dispatcher.Drain();
            Assert.Equal(1, count);
            Assert.Equal("PROVIDER_UNAVAILABLE", Assert.IsType<SidecarException>(error).ReasonName);
        }

        [Fact]
        public async Task CancellationEndsThePumpWithOperationCanceled()
        {
            var dispatcher = new MainThreadDispatcher();
            using var cts = new CancellationTokenSource();
            cts.Cancel();
            Exception? error = null;
            await dispatcher.Pump(Events(10), _ => { }, e => error = e, cts.Token);
            dispatcher.Drain();
            Assert.IsAssignableFrom<OperationCanceledException>(error);
        }

        // A 60 ms hitch: the game's thread is busy while the reader queues text; the game then
        // cancels (on its thread) and clears its label. Nothing of the run may land after that.
        [Fact]
        public async Task QueueModeDeliversNothingOfARunQueuedBeforeItsCancel()
        {
            var dispatcher = new MainThreadDispatcher();
            using var cts = new CancellationTokenSource();
            var delivered = new List<ulong>();
            Exception? end = null;
            var ends = 0;
            var reading = dispatcher.Pump(Events(6), e => delivered.Add(e.Seq), e => { end = e; ends++; }, cts.Token);
            await reading;  // all six read and queued during the "hitch"
            Assert.Equal(7, dispatcher.Pending);
            cts.Cancel();   // the game cancels, on its thread, before its next drain
            dispatcher.Drain();
            Assert.Empty(delivered);
            Assert.Equal(1, ends);
            Assert.IsAssignableFrom<OperationCanceledException>(end);
        }

        [Fact]
        public async Task ThroughASynchronizationContextNothingQueuedBeforeTheCancelLandsAfterIt()
        {
            using var main = new SingleThreadContext();
            var dispatcher = new MainThreadDispatcher(main);
            using var cts = new CancellationTokenSource();
            using var hitch = new ManualResetEventSlim();
            var label = new List<string>();
            var ended = new TaskCompletionSource<Exception?>(TaskCreationOptions.RunContinuationsAsynchronously);
            // The game's thread is busy (a hitch) while the run's text is read and posted behind
            // it; the frame then cancels the run and clears its label, on that thread.
            main.Post(_ => { hitch.Wait(); cts.Cancel(); label.Add("(cleared)"); }, null);
            await dispatcher.Pump(Events(6), e => label.Add(e.Text.Text), e => ended.SetResult(e), cts.Token);
            // Every event was posted before the cancel, and runs after it: none may land.
            hitch.Set();
            Assert.IsAssignableFrom<OperationCanceledException>(await ended.Task);
            var seen = new TaskCompletionSource<string[]>(TaskCreationOptions.RunContinuationsAsynchronously);
            main.Post(_ => seen.SetResult(label.ToArray()), null);
            Assert.Equal(new[] { "(cleared)" }, await seen.Task);
        }
    }

    [Collection("sidecar")]
    public class DispatcherWithRealRunTests
    {
        private readonly SidecarFixture _sidecar;

        public DispatcherWithRealRunTests(SidecarFixture sidecar) { _sidecar = sidecar; }

        [Fact]
        public async Task ARealRunReachesTheGivenThreadInOrder()
        {
            await _sidecar.OpenScene("dispatch");
            using var main = new SingleThreadContext();
            var dispatcher = new MainThreadDispatcher(main);
            var text = "";
            var threads = new ConcurrentBag<int>();
            var ended = new TaskCompletionSource<Exception?>(TaskCreationOptions.RunContinuationsAsynchronously);
            await dispatcher.Pump(_sidecar.Client.Run(TestEnv.Narrate("dispatch", "The gate opens.")), e =>
            {
                threads.Add(Environment.CurrentManagedThreadId);
                if (e.KindCase == RunEvent.KindOneofCase.Text) text += e.Text.Text;
            }, e => ended.SetResult(e));
            Assert.Null(await ended.Task);
            Assert.Equal(TestEnv.ScriptedReply, text);
            Assert.Equal(new[] { main.ThreadId }, threads.Distinct());
        }
    }
}
