#nullable enable
// A session handle that remembers the revision, so a game sends each batch on
// top of the last one without carrying the number around itself.
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.V1;

namespace GameSidecar.Client
{
    public sealed class TrackedSession
    {
        private readonly SidecarClient _client;
        private long _revision;

        internal TrackedSession(SidecarClient client, string sessionId, long revision)
        {
            _client = client;
            SessionId = sessionId;
            _revision = revision;
        }

        public string SessionId { get; }
        /// <summary>The last revision this handle saw the sidecar confirm.</summary>
        public long Revision => Interlocked.Read(ref _revision);

        /// <summary>
        /// Applies ops on top of <see cref="Revision"/> and advances it. On StaleRevisionException
        /// (someone else changed the session) Revision moves to the sidecar's current one and the
        /// exception is rethrown: nothing was applied, so the game decides whether to resend.
        /// </summary>
        public async Task<ApplyDeltasResponse> ApplyAsync(IEnumerable<DeltaOp> ops, string deltaId = "",
            CancellationToken cancellationToken = default)
        {
            try
            {
                var response = await _client.ApplyDeltasAsync(SessionId, Revision, ops, deltaId, cancellationToken).ConfigureAwait(false);
                Interlocked.Exchange(ref _revision, response.Revision);
                return response;
            }
            catch (StaleRevisionException e) when (e.CurrentRevision.HasValue)
            {
                Interlocked.Exchange(ref _revision, e.CurrentRevision.Value);
                throw;
            }
        }

        public Task<ApplyDeltasResponse> ApplyAsync(params DeltaOp[] ops) => ApplyAsync((IEnumerable<DeltaOp>)ops);
    }
}
