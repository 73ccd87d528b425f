#nullable enable
// StreamDeltas: one long-lived bidirectional stream for per-tick state updates.
// One response per request, in order; a rejected batch is reported in its
// response and the stream goes on (docs/protocol.md §5, "StreamDeltas"). The
// stream remembers the batches written but not yet answered: when the sidecar
// ends (SidecarGoneException), those are the ones to resend after a restart.
using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.V1;
using Grpc.Core;

namespace GameSidecar.Client
{
    /// <summary>One writer and one reader may use it at once (gRPC's rule); ApplyAsync is for a
    /// single caller that writes and reads in turn.</summary>
    public sealed class DeltaStream : IAsyncDisposable
    {
        private readonly SidecarClient _client;
        private readonly SidecarConnection _connection;
        private readonly AsyncDuplexStreamingCall<StreamDeltasRequest, StreamDeltasResponse> _call;
        private readonly CancellationTokenSource? _linked;
        private readonly CancellationToken _streamToken;
        private readonly Queue<StreamDeltasRequest> _unanswered = new Queue<StreamDeltasRequest>();
        private bool _completed;

        internal DeltaStream(SidecarClient client, SidecarConnection connection,
            AsyncDuplexStreamingCall<StreamDeltasRequest, StreamDeltasResponse> call,
            CancellationTokenSource? linked, CancellationToken streamToken)
        {
            _client = client;
            _connection = connection;
            _call = call;
            _linked = linked;
            _streamToken = streamToken;
        }

        /// <summary>
        /// The batches written on this stream that have no answer yet, oldest first. After the stream
        /// failed with SidecarGoneException these may or may not have been applied: resend them, with
        /// their delta IDs, once the sidecar is back (a batch applied before is then replayed, not applied twice).
        /// </summary>
        public IReadOnlyList<StreamDeltasRequest> Unacknowledged
        {
            get
            {
                lock (_unanswered) return _unanswered.ToArray();
            }
        }

        /// <summary>Sends one batch (pipelining is allowed: send k+1 before the answer to k). A batch
        /// without a delta ID gets one, so it can be resent safely.</summary>
        public async Task WriteAsync(StreamDeltasRequest request, CancellationToken cancellationToken = default)
        {
            _connection.ThrowIfGone();
            if (string.IsNullOrEmpty(request.DeltaId)) request.DeltaId = SidecarClient.NewId();
            lock (_unanswered) _unanswered.Enqueue(request);
            try
            {
                await _call.RequestStream.WriteAsync(request, cancellationToken).ConfigureAwait(false);
            }
            catch (RpcException e)
            {
                throw await TranslateAsync(e, cancellationToken).ConfigureAwait(false);
            }
            catch (System.IO.IOException e)
            {
                // The connection broke under the write (gRPC passes the transport's error through).
                throw await _connection.TranslateIoAsync(e).ConfigureAwait(false);
            }
            catch (InvalidOperationException)
            {
                // Refused on the spot (the stream was completed): it never left.
                lock (_unanswered) RemoveLast(request);
                throw;
            }
        }

        /// <summary>The next answer, in request order; null at the end of the stream. A rejected
        /// batch is an answer with Error set (use SidecarErrors.FromDetail for the exception).</summary>
        public async Task<StreamDeltasResponse?> ReadAsync(CancellationToken cancellationToken = default)
        {
            StreamDeltasResponse? response;
            try
            {
                response = await _call.ResponseStream.MoveNext(cancellationToken).ConfigureAwait(false) ? _call.ResponseStream.Current : null;
            }
            catch (RpcException e)
            {
                throw await TranslateAsync(e, cancellationToken).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (_connection.GoneInstead(Caller(cancellationToken)) != null)
            {
                throw _connection.GoneInstead(Caller(cancellationToken))!;
            }
            if (response == null) return null;
            StreamDeltasRequest? answered = null;
            lock (_unanswered)
            {
                if (_unanswered.Count > 0) answered = _unanswered.Dequeue();
            }
            if (answered != null && response.Error == null) _client.Observed(answered.SessionId, response.Revision, exact: false);
            return response;
        }

        /// <summary>Write then read: the batch's outcome like ApplyDeltas gives it (a rejected batch
        /// throws its SidecarException, e.g. StaleRevisionException; the stream goes on).</summary>
        public async Task<StreamDeltasResponse> ApplyAsync(StreamDeltasRequest request, CancellationToken cancellationToken = default)
        {
            await WriteAsync(request, cancellationToken).ConfigureAwait(false);
            var response = await ReadAsync(cancellationToken).ConfigureAwait(false)
                ?? throw new SidecarException(StatusCode.Internal, "", "StreamDeltas ended without answering the batch");
            if (response.Error != null) throw SidecarErrors.FromDetail(response.Error);
            return response;
        }

        /// <summary>Ends the stream: no more writes; returns what the sidecar still sends.</summary>
        public async Task<IReadOnlyList<StreamDeltasResponse>> CompleteAsync(CancellationToken cancellationToken = default)
        {
            var rest = new List<StreamDeltasResponse>();
            if (!_completed)
            {
                _completed = true;
                try
                {
                    await _call.RequestStream.CompleteAsync().ConfigureAwait(false);
                }
                catch (RpcException e)
                {
                    throw await TranslateAsync(e, cancellationToken).ConfigureAwait(false);
                }
                catch (System.IO.IOException e)
                {
                    throw await _connection.TranslateIoAsync(e).ConfigureAwait(false);
                }
            }
            StreamDeltasResponse? next;
            while ((next = await ReadAsync(cancellationToken).ConfigureAwait(false)) != null) rest.Add(next);
            return rest;
        }

        /// <summary>Cancels the stream if it was not completed.</summary>
        public ValueTask DisposeAsync()
        {
            _call.Dispose();
            _linked?.Dispose();
            return default;
        }

        private CancellationToken Caller(CancellationToken cancellationToken) =>
            _streamToken.IsCancellationRequested ? _streamToken : cancellationToken;

        private Task<Exception> TranslateAsync(RpcException e, CancellationToken cancellationToken) =>
            _connection.TranslateAsync(e, Caller(cancellationToken));

        private void RemoveLast(StreamDeltasRequest request)
        {
            var kept = _unanswered.ToArray();
            _unanswered.Clear();
            var removed = false;
            for (var i = kept.Length - 1; i >= 0; i--)
            {
                if (!removed && ReferenceEquals(kept[i], request)) { removed = true; kept[i] = null!; }
            }
            foreach (var r in kept) if (r != null) _unanswered.Enqueue(r);
        }
    }
}
