#nullable enable
// Hands run events to one thread (a game's main thread), so game objects are only
// touched there. Runs are read on thread-pool threads; nothing here calls an
// engine API. Two ways to reach the thread:
//   - a SynchronizationContext (Unity's UnitySynchronizationContext, captured on the
//     main thread), which runs posted work on that thread;
//   - a queue the owner thread drains itself, once per frame (Update), when no such
//     context exists or the game wants to bound work per frame.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.V1;

namespace GameSidecar.Client
{
    /// <summary>Hands work and run events to the game's main thread: through a SynchronizationContext (Unity's), or a queue the game drains.</summary>
    public sealed class MainThreadDispatcher
    {
        private readonly SynchronizationContext? _context;
        private readonly ConcurrentQueue<Action> _queue = new ConcurrentQueue<Action>();

        /// <summary>Posts through <paramref name="context"/> (capture it on the target thread).</summary>
        public MainThreadDispatcher(SynchronizationContext context)
        {
            _context = context ?? throw new ArgumentNullException(nameof(context));
        }

        /// <summary>Queue mode: work waits until the owner thread calls <see cref="Drain"/>.</summary>
        public MainThreadDispatcher() { }

        /// <summary>True when there is no context: the game must call <see cref="Drain"/> each frame.</summary>
        public bool UsesQueue => _context == null;

        /// <summary>Work queued and not yet drained (queue mode).</summary>
        public int Pending => _queue.Count;

        /// <summary>Runs <paramref name="action"/> on the main thread (posted to the context, or queued for <see cref="Drain"/>).</summary>
        public void Post(Action action)
        {
            if (_context != null) _context.Post(state => ((Action)state!)(), action);
            else _queue.Enqueue(action);
        }

        /// <summary>Runs queued work (up to <paramref name="max"/> items) on the calling thread, in order. Returns how many ran.</summary>
        public int Drain(int max = int.MaxValue)
        {
            var n = 0;
            while (n < max && _queue.TryDequeue(out var action))
            {
                action();
                n++;
            }
            return n;
        }

        /// <summary>
        /// Reads <paramref name="events"/> off the calling thread and delivers each one through
        /// <paramref name="onEvent"/> on the dispatcher's thread, in order; then <paramref name="onEnd"/>
        /// once, also there, with null after a good run or the exception that ended it
        /// (SidecarException, or OperationCanceledException when cancelled). The returned task
        /// completes when reading ends (not when the callbacks have run).
        /// Once <paramref name="cancellationToken"/> is cancelled, no event of the run is delivered,
        /// even one read and queued before the cancel (a hitch can hold many): a game that clears
        /// its label when it cancels never sees stale text land after. <paramref name="onEnd"/> still
        /// comes, once, with an OperationCanceledException.
        /// </summary>
        public Task Pump(IAsyncEnumerable<RunEvent> events, Action<RunEvent> onEvent, Action<Exception?> onEnd,
            CancellationToken cancellationToken = default)
        {
            return Task.Run(async () =>
            {
                Exception? error = null;
                try
                {
                    await foreach (var e in events.WithCancellation(cancellationToken).ConfigureAwait(false))
                    {
                        var captured = e;
                        // Checked where the event lands, not where it was read: the cancel
                        // may come (on the game's thread) while it waits in the queue.
                        Post(() =>
                        {
                            if (!cancellationToken.IsCancellationRequested) onEvent(captured);
                        });
                    }
                }
                catch (Exception e)
                {
                    error = e;
                }
                Post(() => onEnd(cancellationToken.IsCancellationRequested && !(error is OperationCanceledException)
                    ? new OperationCanceledException(cancellationToken)
                    : error));
            }, CancellationToken.None);
        }
    }
}
