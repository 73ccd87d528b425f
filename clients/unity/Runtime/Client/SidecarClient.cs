#nullable enable
// SidecarClient: the RPCs a game needs, each with `authorization: Bearer <token>`
// attached and each failure thrown as a SidecarException (SidecarErrors maps them).
// Same operations, same names as sidecar/client.py and clients/cpp's SidecarClient.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.V1;
using Grpc.Core;
using Grpc.Net.Client;

namespace GameSidecar.Client
{
    public sealed class SidecarClient : IDisposable
    {
        private readonly Metadata _auth;
        private readonly SidecarClientOptions _options;

        /// <summary>Connects to a sidecar from its handshake with the token to send.</summary>
        public SidecarClient(Handshake handshake, string token, SidecarClientOptions? options = null)
        {
            _options = options ?? new SidecarClientOptions();
            // Plain metadata, not CallCredentials: gRPC drops call credentials on insecure channels.
            _auth = new Metadata { { "authorization", "Bearer " + token } };
            Channel = SidecarTransport.CreateChannel(handshake, _options);
            Sidecar = new SidecarService.SidecarServiceClient(Channel);
            Sessions = new SessionService.SessionServiceClient(Channel);
            Agent = new AgentService.AgentServiceClient(Channel);
        }

        public GrpcChannel Channel { get; }
        /// <summary>The raw stubs, for what the helpers below do not cover.</summary>
        public SidecarService.SidecarServiceClient Sidecar { get; }
        public SessionService.SessionServiceClient Sessions { get; }
        public AgentService.AgentServiceClient Agent { get; }

        /// <summary>Call options with the token and, for unary calls, the deadline.</summary>
        public CallOptions Options(CancellationToken cancellationToken, bool unary = true)
        {
            DateTime? deadline = unary && _options.CallTimeout.HasValue ? DateTime.UtcNow + _options.CallTimeout.Value : (DateTime?)null;
            return new CallOptions(headers: _auth, deadline: deadline, cancellationToken: cancellationToken);
        }

        // SidecarService

        public Task<GetInfoResponse> GetInfoAsync(bool includeStats = false, CancellationToken cancellationToken = default) =>
            Unary(Sidecar.GetInfoAsync(new GetInfoRequest { IncludeStats = includeStats }, Options(cancellationToken)), cancellationToken);

        public Task<ShutdownResponse> ShutdownAsync(string reason = "", CancellationToken cancellationToken = default) =>
            Unary(Sidecar.ShutdownAsync(new ShutdownRequest { Reason = reason }, Options(cancellationToken)), cancellationToken);

        // SessionService

        public Task<OpenSessionResponse> OpenSessionAsync(string sessionId = "", SessionOptions? options = null,
            CancellationToken cancellationToken = default)
        {
            var request = new OpenSessionRequest { SessionId = sessionId, Options = options ?? new SessionOptions() };
            return Unary(Sessions.OpenSessionAsync(request, Options(cancellationToken)), cancellationToken);
        }

        /// <summary>Opens (or resumes) a session and returns a handle that tracks its revision.</summary>
        public async Task<TrackedSession> OpenTrackedSessionAsync(string sessionId, SessionOptions? options = null,
            CancellationToken cancellationToken = default)
        {
            var opened = await OpenSessionAsync(sessionId, options, cancellationToken).ConfigureAwait(false);
            return new TrackedSession(this, opened.SessionId, opened.Revision);
        }

        public Task<CloseSessionResponse> CloseSessionAsync(string sessionId, CancellationToken cancellationToken = default) =>
            Unary(Sessions.CloseSessionAsync(new CloseSessionRequest { SessionId = sessionId }, Options(cancellationToken)), cancellationToken);

        /// <summary>Applies one batch atomically against <paramref name="baseRevision"/>. An empty
        /// <paramref name="deltaId"/> gets a random one, so a retry of this exact call is safe.
        /// Throws StaleRevisionException (with CurrentRevision) when the base is not current.</summary>
        public Task<ApplyDeltasResponse> ApplyDeltasAsync(string sessionId, long baseRevision, IEnumerable<DeltaOp> ops,
            string deltaId = "", CancellationToken cancellationToken = default)
        {
            var request = new ApplyDeltasRequest
            {
                SessionId = sessionId,
                BaseRevision = baseRevision,
                DeltaId = string.IsNullOrEmpty(deltaId) ? NewId() : deltaId,
            };
            request.Ops.AddRange(ops);
            return Unary(Sessions.ApplyDeltasAsync(request, Options(cancellationToken)), cancellationToken);
        }

        /// <summary>Opens a StreamDeltas stream: one batch per message, answered in order.</summary>
        public DeltaStream StreamDeltas(CancellationToken cancellationToken = default) =>
            new DeltaStream(Sessions.StreamDeltas(Options(cancellationToken, unary: false)), cancellationToken);

        public Task<ReplaceStateResponse> ReplaceStateAsync(ReplaceStateRequest request, CancellationToken cancellationToken = default) =>
            Unary(Sessions.ReplaceStateAsync(request, Options(cancellationToken)), cancellationToken);

        public Task<GetStateResponse> GetStateAsync(GetStateRequest request, CancellationToken cancellationToken = default) =>
            Unary(Sessions.GetStateAsync(request, Options(cancellationToken)), cancellationToken);

        public Task<ExportSessionResponse> ExportSessionAsync(string sessionId, CancellationToken cancellationToken = default) =>
            Unary(Sessions.ExportSessionAsync(new ExportSessionRequest { SessionId = sessionId }, Options(cancellationToken)), cancellationToken);

        public Task<ImportSessionResponse> ImportSessionAsync(ImportSessionRequest request, CancellationToken cancellationToken = default) =>
            Unary(Sessions.ImportSessionAsync(request, Options(cancellationToken)), cancellationToken);

        // AgentService

        /// <summary>
        /// Streams the run's events. Cancelling <paramref name="cancellationToken"/> (or leaving the
        /// loop early) cancels the call: the sidecar stops the model call upstream and records the
        /// text so far as interrupted; the loop then throws OperationCanceledException. A failed
        /// run throws SidecarException after the events that came before it.
        /// </summary>
        public async IAsyncEnumerable<RunEvent> Run(RunRequest request,
            [EnumeratorCancellation] CancellationToken cancellationToken = default)
        {
            AsyncServerStreamingCall<RunResponse> call;
            try
            {
                call = Agent.Run(request, Options(cancellationToken, unary: false));
            }
            catch (RpcException e)
            {
                throw SidecarErrors.Translate(e, cancellationToken);
            }
            using (call)
            {
                var stream = call.ResponseStream;
                while (true)
                {
                    bool more;
                    try
                    {
                        more = await stream.MoveNext(cancellationToken).ConfigureAwait(false);
                    }
                    catch (RpcException e)
                    {
                        throw SidecarErrors.Translate(e, cancellationToken);
                    }
                    if (!more) yield break;
                    yield return stream.Current.Event;
                }
            }
        }

        /// <summary>Just the text of a narration, as it streams.</summary>
        public async IAsyncEnumerable<string> Narrate(string sessionId, string text, string actorId = "",
            [EnumeratorCancellation] CancellationToken cancellationToken = default)
        {
            var request = new RunRequest { SessionId = sessionId, ActorId = actorId, Narrate = new NarrateInput { Text = text } };
            await foreach (var e in Run(request, cancellationToken).ConfigureAwait(false))
            {
                if (e.KindCase == RunEvent.KindOneofCase.Text) yield return e.Text.Text;
            }
        }

        /// <summary>Just the text of a Continue (the actor carries on from its last reply), as it streams.</summary>
        public async IAsyncEnumerable<string> ContinueStory(string sessionId, string actorId = "",
            [EnumeratorCancellation] CancellationToken cancellationToken = default)
        {
            var request = new RunRequest { SessionId = sessionId, ActorId = actorId, ContinueStory = new ContinueInput() };
            await foreach (var e in Run(request, cancellationToken).ConfigureAwait(false))
            {
                if (e.KindCase == RunEvent.KindOneofCase.Text) yield return e.Text.Text;
            }
        }

        /// <summary>Asks the sidecar to cancel a run by ID; its stream then ends with CANCELLED / RUN_CANCELLED.
        /// Throws SidecarNotFoundException (RUN_NOT_FOUND) when it is no longer running.</summary>
        public Task<CancelRunResponse> CancelRunAsync(string runId, CancellationToken cancellationToken = default) =>
            Unary(Agent.CancelRunAsync(new CancelRunRequest { RunId = runId }, Options(cancellationToken)), cancellationToken);

        public Task<PreviewPromptResponse> PreviewPromptAsync(RunRequest run, CancellationToken cancellationToken = default) =>
            Unary(Agent.PreviewPromptAsync(new PreviewPromptRequest { Run = run }, Options(cancellationToken)), cancellationToken);

        public Task<ReadTranscriptResponse> ReadTranscriptAsync(ReadTranscriptRequest request, CancellationToken cancellationToken = default) =>
            Unary(Agent.ReadTranscriptAsync(request, Options(cancellationToken)), cancellationToken);

        public void Dispose() => Channel.Dispose();

        /// <summary>A fresh ID (delta IDs, run IDs).</summary>
        public static string NewId() => Guid.NewGuid().ToString("N");

        private static async Task<T> Unary<T>(AsyncUnaryCall<T> call, CancellationToken cancellationToken)
        {
            using (call)
            {
                try
                {
                    return await call.ResponseAsync.ConfigureAwait(false);
                }
                catch (RpcException e)
                {
                    throw SidecarErrors.Translate(e, cancellationToken);
                }
            }
        }
    }
}
