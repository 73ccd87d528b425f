#nullable enable
// A session handle that remembers the revision, so a game sends each batch on
// top of the last one without carrying the number around itself. It follows every
// write its client makes to the session, and it survives a supervised restart:
// re-opened, its unacknowledged batch resent under the same delta ID (the sidecar
// replays a delta ID it has applied, so the batch lands exactly once).
using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.V1;

namespace GameSidecar.Client
{
    /// <summary>A session handle that keeps the session's revision and resends an unacknowledged batch after a restart.</summary>
    public sealed class TrackedSession
    {
        private readonly SidecarClient _client;
        private readonly SessionOptions _options;
        private readonly SemaphoreSlim _gate = new SemaphoreSlim(1, 1);
        private readonly string _prefix = "t" + SidecarClient.NewId().Substring(0, 12);
        private long _revision;
        private long _batches;
        private Pending? _pending;

        internal TrackedSession(SidecarClient client, string sessionId, long revision, SessionOptions options)
        {
            _client = client;
            SessionId = sessionId;
            _revision = revision;
            _options = options;
        }

        /// <summary>The session's ID.</summary>
        public string SessionId { get; }
        /// <summary>The last revision this handle saw the sidecar confirm.</summary>
        public long Revision => Interlocked.Read(ref _revision);

        /// <summary>The delta ID of the batch sent without an acknowledgement because the sidecar ended
        /// (resent after a restart); null when there is none.</summary>
        public string? UnacknowledgedDeltaId => Volatile.Read(ref _pending)?.DeltaId;

        /// <summary>
        /// Applies ops on top of <see cref="Revision"/> and advances it. On StaleRevisionException
        /// (someone else changed the session) Revision moves to the sidecar's current one and the
        /// exception is rethrown: nothing was applied, so the game decides whether to resend. A batch
        /// without <paramref name="deltaId"/> gets "&lt;tracker prefix&gt;-&lt;n&gt;". When the sidecar ends while the batch is in
        /// flight (SidecarGoneException) the batch is kept (<see cref="UnacknowledgedDeltaId"/> names it): a restart
        /// resends it, it lands exactly once, and SidecarProcess.Restarted reports it; do not resend it yourself.
        /// A call made while the sidecar is already gone fails at once and keeps nothing.
        /// Calls on one handle are serialized.
        /// </summary>
        public async Task<ApplyDeltasResponse> ApplyAsync(IEnumerable<DeltaOp> ops, string deltaId = "",
            CancellationToken cancellationToken = default)
        {
            var batch = ops.ToList();
            if (string.IsNullOrEmpty(deltaId)) deltaId = _prefix + "-" + Interlocked.Increment(ref _batches);
            await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                // The sidecar is already gone (restarting): refused at once, not kept, and an
                // earlier unacknowledged batch stays the one the restart resends.
                _client.Connection.ThrowIfGone();
                var pending = new Pending(deltaId, Revision, batch);
                Volatile.Write(ref _pending, pending);
                try
                {
                    var response = await _client.ApplyDeltasAsync(SessionId, pending.BaseRevision, batch, deltaId, cancellationToken)
                        .ConfigureAwait(false);
                    Volatile.Write(ref _pending, null);
                    Observe(response.Revision, exact: false);
                    return response;
                }
                catch (SidecarGoneException)
                {
                    throw; // kept for the restart to resend
                }
                catch (StaleRevisionException e) when (e.CurrentRevision.HasValue)
                {
                    Volatile.Write(ref _pending, null);
                    Interlocked.Exchange(ref _revision, e.CurrentRevision.Value);
                    throw;
                }
                catch
                {
                    Volatile.Write(ref _pending, null);
                    throw;
                }
            }
            finally
            {
                _gate.Release();
            }
        }

        /// <summary>Applies <paramref name="ops"/> as one batch against the tracked revision (see the IEnumerable overload).</summary>
        public Task<ApplyDeltasResponse> ApplyAsync(params DeltaOp[] ops) => ApplyAsync((IEnumerable<DeltaOp>)ops);

        /// <summary>A write acknowledged elsewhere (explicit-base ApplyDeltas, DeltaStream, ReplaceState).</summary>
        internal void Observe(long revision, bool exact)
        {
            if (exact)
            {
                Interlocked.Exchange(ref _revision, revision);
                return;
            }
            long seen;
            while ((seen = Interlocked.Read(ref _revision)) < revision)
            {
                if (Interlocked.CompareExchange(ref _revision, revision, seen) == seen) return;
            }
        }

        /// <summary>
        /// After a restart: re-open the session and resend the unacknowledged batch. Returns whether the
        /// session was lost (it came back empty or behind what was acknowledged) and the resend's outcome.
        /// </summary>
        internal async Task<(bool Lost, ResentBatch? Resent)> ResumeAsync(CancellationToken cancellationToken)
        {
            await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                var acknowledged = Revision;
                var pending = Volatile.Read(ref _pending);
                Volatile.Write(ref _pending, null);
                var opened = await _client.OpenSessionAsync(SessionId, _options, cancellationToken).ConfigureAwait(false);
                Interlocked.Exchange(ref _revision, opened.Revision);
                var lost = opened.Revision < acknowledged || (opened.Created && acknowledged > 0);
                if (pending == null) return (lost, null);
                if (lost)
                {
                    var why = new InvalidOperationException(
                        $"session {SessionId} was lost with the sidecar (re-opened at revision {opened.Revision}, " +
                        $"{acknowledged} acknowledged): batch {pending.DeltaId} was not applied; resync with ReplaceState");
                    return (true, new ResentBatch(SessionId, pending.DeltaId, false, false, opened.Revision, why));
                }
                try
                {
                    var response = await _client.ApplyDeltasAsync(SessionId, pending.BaseRevision, pending.Ops, pending.DeltaId,
                        cancellationToken).ConfigureAwait(false);
                    Observe(response.Revision, exact: false);
                    return (false, new ResentBatch(SessionId, pending.DeltaId, true, response.Replayed, response.Revision, null));
                }
                catch (SidecarGoneException)
                {
                    Volatile.Write(ref _pending, pending); // gone again: the next restart resends it
                    throw;
                }
                catch (SidecarException e)
                {
                    return (false, new ResentBatch(SessionId, pending.DeltaId, false, false, Revision, e));
                }
            }
            finally
            {
                _gate.Release();
            }
        }

        private sealed class Pending
        {
            public Pending(string deltaId, long baseRevision, List<DeltaOp> ops)
            {
                DeltaId = deltaId;
                BaseRevision = baseRevision;
                Ops = ops;
            }

            public string DeltaId { get; }
            public long BaseRevision { get; }
            public List<DeltaOp> Ops { get; }
        }
    }
}
