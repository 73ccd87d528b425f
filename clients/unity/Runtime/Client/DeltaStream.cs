#nullable enable
// StreamDeltas: one long-lived bidirectional stream for per-tick state updates.
// One response per request, in order; a rejected batch is reported in its
// response and the stream goes on (docs/protocol.md §5, "StreamDeltas").
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
        private readonly AsyncDuplexStreamingCall<StreamDeltasRequest, StreamDeltasResponse> _call;
        private readonly CancellationToken _streamToken;
        private bool _completed;

        internal DeltaStream(AsyncDuplexStreamingCall<StreamDeltasRequest, StreamDeltasResponse> call, CancellationToken streamToken)
        {
            _call = call;
            _streamToken = streamToken;
        }

        /// <summary>Sends one batch (pipelining is allowed: send k+1 before the answer to k).</summary>
        public async Task WriteAsync(StreamDeltasRequest request, CancellationToken cancellationToken = default)
        {
            try
            {
                await _call.RequestStream.WriteAsync(request, cancellationToken).ConfigureAwait(false);
            }
            catch (RpcException e)
            {
                throw Translate(e, cancellationToken);
            }
        }

        /// <summary>The next answer, in request order; null at the end of the stream. A rejected
        /// batch is an answer with Error set (use SidecarErrors.FromDetail for the exception).</summary>
        public async Task<StreamDeltasResponse?> ReadAsync(CancellationToken cancellationToken = default)
        {
            try
            {
                return await _call.ResponseStream.MoveNext(cancellationToken).ConfigureAwait(false) ? _call.ResponseStream.Current : null;
            }
            catch (RpcException e)
            {
                throw Translate(e, cancellationToken);
            }
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
                    throw Translate(e, cancellationToken);
                }
            }
            StreamDeltasResponse? next;
            while ((next = await ReadAsync(cancellationToken).ConfigureAwait(false)) != null) rest.Add(next);
            return rest;
        }

        private Exception Translate(RpcException e, CancellationToken cancellationToken) =>
            SidecarErrors.Translate(e, _streamToken.IsCancellationRequested ? _streamToken : cancellationToken);

        /// <summary>Cancels the stream if it was not completed.</summary>
        public ValueTask DisposeAsync()
        {
            _call.Dispose();
            return default;
        }
    }
}
