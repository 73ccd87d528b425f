#nullable enable
// SidecarClient: the RPCs a game needs, each with `authorization: Bearer <token>`
// attached and each failure thrown as a SidecarException (SidecarErrors maps them;
// SidecarGoneException once the process behind the client has ended). Same operations,
// same names as sidecar.client and clients/cpp's SidecarClient. A client from
// SidecarProcess.Client survives supervised restarts: its connection is swapped.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.V1;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Net.Client;

namespace GameSidecar.Client
{
    /// <summary>The RPCs a game needs, with the token attached and every failure thrown as a SidecarException.</summary>
    public sealed class SidecarClient : IDisposable
    {
        private readonly SidecarClientOptions _options;
        private readonly ConcurrentDictionary<string, TrackedSession> _tracked =
            new ConcurrentDictionary<string, TrackedSession>(StringComparer.Ordinal);
        private volatile SidecarConnection _connection;

        /// <summary>Connects to a sidecar from its handshake with the token to send.</summary>
        public SidecarClient(Handshake handshake, string token, SidecarClientOptions? options = null)
            : this(handshake, token, options ?? new SidecarClientOptions(), null)
        {
        }

        internal SidecarClient(Handshake handshake, string token, SidecarClientOptions options, ISidecarLifeline? lifeline)
        {
            _options = options;
            _connection = new SidecarConnection(handshake, token, _options, lifeline);
        }

        /// <summary>The current channel (a new one after a supervised restart).</summary>
        public GrpcChannel Channel => _connection.Channel;
        /// <summary>The raw stubs, for what the helpers below do not cover (of the current channel).</summary>
        public SidecarService.SidecarServiceClient Sidecar => _connection.Sidecar;
        /// <summary>The raw SessionService stub of the current channel.</summary>
        public SessionService.SessionServiceClient Sessions => _connection.Sessions;
        /// <summary>The raw AgentService stub of the current channel.</summary>
        public AgentService.AgentServiceClient Agent => _connection.Agent;
        /// <summary>Where the sidecar is reached: "unix:/path/sidecar.sock" or "host:port".</summary>
        public string Endpoint => _connection.Endpoint;

        internal SidecarConnection Connection => _connection;
        internal IEnumerable<TrackedSession> TrackedSessions => _tracked.Values;

        /// <summary>Call options with the token and, for unary calls, the deadline.</summary>
        public CallOptions Options(CancellationToken cancellationToken, bool unary = true) =>
            Options(_connection, cancellationToken, unary);

        private CallOptions Options(SidecarConnection connection, CancellationToken cancellationToken, bool unary)
        {
            DateTime? deadline = unary && _options.CallTimeout.HasValue ? DateTime.UtcNow + _options.CallTimeout.Value : (DateTime?)null;
            return new CallOptions(headers: connection.Auth, deadline: deadline, cancellationToken: cancellationToken);
        }

        // SidecarService

        /// <summary>The sidecar's version, profiles and (with <paramref name="includeStats"/>) per-session statistics.</summary>
        public Task<GetInfoResponse> GetInfoAsync(bool includeStats = false, CancellationToken cancellationToken = default) =>
            Unary((c, o) => c.Sidecar.GetInfoAsync(new GetInfoRequest { IncludeStats = includeStats }, o), cancellationToken);

        /// <summary>Asks the sidecar to shut down (it drains runs and exits); <paramref name="reason"/> goes to its log.</summary>
        public Task<ShutdownResponse> ShutdownAsync(string reason = "", CancellationToken cancellationToken = default) =>
            Unary((c, o) => c.Sidecar.ShutdownAsync(new ShutdownRequest { Reason = reason }, o), cancellationToken);

        // SessionService

        /// <summary>Opens a session, or resumes it (with --state-dir, after a restart); an empty ID gets a fresh one.</summary>
        public Task<OpenSessionResponse> OpenSessionAsync(string sessionId = "", SessionOptions? options = null,
            CancellationToken cancellationToken = default)
        {
            var request = new OpenSessionRequest { SessionId = sessionId, Options = options ?? new SessionOptions() };
            return Unary((c, o) => c.Sessions.OpenSessionAsync(request, o), cancellationToken);
        }

        /// <summary>
        /// Opens (or resumes) a session and returns a handle that tracks its revision. The handle follows
        /// every write this client makes to the session (ApplyDeltasAsync with an explicit base,
        /// ReplaceStateAsync, DeltaStream answers), and after a supervised restart it is re-opened and its
        /// unacknowledged batch resent (SidecarProcess.Restarted reports what happened).
        /// </summary>
        public async Task<TrackedSession> OpenTrackedSessionAsync(string sessionId, SessionOptions? options = null,
            CancellationToken cancellationToken = default)
        {
            var opened = await OpenSessionAsync(sessionId, options, cancellationToken).ConfigureAwait(false);
            var session = new TrackedSession(this, opened.SessionId, opened.Revision, options ?? new SessionOptions());
            _tracked[opened.SessionId] = session;
            return session;
        }

        /// <summary>Closes a session: its runs are cancelled and its state dropped (and deleted from --state-dir).</summary>
        public async Task<CloseSessionResponse> CloseSessionAsync(string sessionId, CancellationToken cancellationToken = default)
        {
            var closed = await Unary((c, o) => c.Sessions.CloseSessionAsync(new CloseSessionRequest { SessionId = sessionId }, o),
                cancellationToken).ConfigureAwait(false);
            _tracked.TryRemove(sessionId, out _);
            return closed;
        }

        /// <summary>Applies one batch atomically against <paramref name="baseRevision"/>. An empty
        /// <paramref name="deltaId"/> gets a random one, so a retry of this exact call is safe.
        /// Throws StaleRevisionException (with CurrentRevision) when the base is not current.</summary>
        public async Task<ApplyDeltasResponse> ApplyDeltasAsync(string sessionId, long baseRevision, IEnumerable<DeltaOp> ops,
            string deltaId = "", CancellationToken cancellationToken = default)
        {
            var request = new ApplyDeltasRequest
            {
                SessionId = sessionId,
                BaseRevision = baseRevision,
                DeltaId = string.IsNullOrEmpty(deltaId) ? NewId() : deltaId,
            };
            request.Ops.AddRange(ops);
            var response = await Unary((c, o) => c.Sessions.ApplyDeltasAsync(request, o), cancellationToken).ConfigureAwait(false);
            Observed(sessionId, response.Revision, exact: false);
            return response;
        }

        /// <summary>Opens a StreamDeltas stream: one batch per message, answered in order. It ends with
        /// SidecarGoneException when the process does; its Unacknowledged batches can then be resent
        /// (same delta IDs) on a new stream after a restart.</summary>
        public DeltaStream StreamDeltas(CancellationToken cancellationToken = default)
        {
            var connection = Current();
            var linked = connection.Link(cancellationToken);
            var call = connection.Sessions.StreamDeltas(Options(connection, linked?.Token ?? cancellationToken, unary: false));
            return new DeltaStream(this, connection, call, linked, cancellationToken);
        }

        /// <summary>
        /// Replaces the session's whole state (protocol.md §5, "Resync"). A request over <see cref="ChunkBytes"/>
        /// goes in pieces through the client-streaming ReplaceStateChunked, so a world bigger than the sidecar's
        /// max_request_bytes (a single message over it is refused with RESOURCE_EXHAUSTED) still goes through,
        /// up to its max_snapshot_bytes. Either way the answer and the errors are ReplaceState's.
        /// </summary>
        public async Task<ReplaceStateResponse> ReplaceStateAsync(ReplaceStateRequest request, CancellationToken cancellationToken = default)
        {
            ReplaceStateResponse response;
            if (request.CalculateSize() <= ChunkBytes)
            {
                response = await Unary((c, o) => c.Sessions.ReplaceStateAsync(request, o), cancellationToken).ConfigureAwait(false);
            }
            else
            {
                var chunked = await Chunked((c, o) => c.Sessions.ReplaceStateChunked(o), request.ToByteArray(),
                    piece => new ReplaceStateChunkedRequest { Data = piece }, cancellationToken).ConfigureAwait(false);
                response = new ReplaceStateResponse { Revision = chunked.Revision };
            }
            Observed(request.SessionId, response.Revision, exact: true);
            return response;
        }

        /// <summary>Reads the session's state (or a past revision of it).</summary>
        public Task<GetStateResponse> GetStateAsync(GetStateRequest request, CancellationToken cancellationToken = default) =>
            Unary((c, o) => c.Sessions.GetStateAsync(request, o), cancellationToken);

        /// <summary>The session as a save blob (world, transcripts, notes) for <see cref="ImportSessionAsync"/>.</summary>
        public Task<ExportSessionResponse> ExportSessionAsync(string sessionId, CancellationToken cancellationToken = default) =>
            Unary((c, o) => c.Sessions.ExportSessionAsync(new ExportSessionRequest { SessionId = sessionId }, o), cancellationToken);

        /// <summary>Loads a save blob into a session. A request over <see cref="ChunkBytes"/> goes in pieces
        /// (ImportSessionChunked), as <see cref="ReplaceStateAsync"/> does.</summary>
        public async Task<ImportSessionResponse> ImportSessionAsync(ImportSessionRequest request, CancellationToken cancellationToken = default)
        {
            if (request.CalculateSize() <= ChunkBytes)
                return await Unary((c, o) => c.Sessions.ImportSessionAsync(request, o), cancellationToken).ConfigureAwait(false);
            var chunked = await Chunked((c, o) => c.Sessions.ImportSessionChunked(o), request.ToByteArray(),
                piece => new ImportSessionChunkedRequest { Data = piece }, cancellationToken).ConfigureAwait(false);
            return new ImportSessionResponse { SessionId = chunked.SessionId, Revision = chunked.Revision };
        }

        /// <summary>Requests bigger than this (serialized) go in pieces of this size: the sidecar's
        /// max_request_bytes is at least 1 MiB (as sidecar.client's CHUNK_BYTES).</summary>
        public const int ChunkBytes = 512 * 1024;

        // AgentService

        /// <summary>
        /// Streams the run's events. Cancelling <paramref name="cancellationToken"/> (or leaving the
        /// loop early) cancels the call: the sidecar stops the model call upstream and records the
        /// text so far as interrupted; the loop then throws OperationCanceledException. A failed
        /// run throws SidecarException after the events that came before it; SidecarGoneException
        /// when the sidecar process ended (runs are never retried: the game decides).
        /// </summary>
        public async IAsyncEnumerable<RunEvent> Run(RunRequest request,
            [EnumeratorCancellation] CancellationToken cancellationToken = default)
        {
            var connection = Current();
            using var linked = connection.Link(cancellationToken);
            var token = linked?.Token ?? cancellationToken;
            AsyncServerStreamingCall<RunResponse> call;
            try
            {
                call = connection.Agent.Run(request, Options(connection, token, unary: false));
            }
            catch (RpcException e)
            {
                throw await connection.TranslateAsync(e, cancellationToken).ConfigureAwait(false);
            }
            using (call)
            {
                var stream = call.ResponseStream;
                while (true)
                {
                    bool more;
                    try
                    {
                        more = await stream.MoveNext(token).ConfigureAwait(false);
                    }
                    catch (RpcException e)
                    {
                        throw await connection.TranslateAsync(e, cancellationToken).ConfigureAwait(false);
                    }
                    catch (OperationCanceledException) when (connection.GoneInstead(cancellationToken) != null)
                    {
                        throw connection.GoneInstead(cancellationToken)!;
                    }
                    if (!more) yield break;
                    yield return stream.Current.Event;
                }
            }
        }

        /// <summary>A narration as it streams: each piece's text, whether it ends a sentence, and the entities it
        /// names (spans in UTF-16, see <see cref="NarrationPiece"/>). Pieces print as their text.</summary>
        public IAsyncEnumerable<NarrationPiece> Narrate(string sessionId, string text, string actorId = "",
            CancellationToken cancellationToken = default) =>
            Narrate(new RunRequest { SessionId = sessionId, ActorId = actorId, Narrate = new NarrateInput { Text = text } }, cancellationToken);

        /// <summary>The text pieces of any run (a narration with entity IDs, a dialogue, a description...), as
        /// <see cref="Narrate(string, string, string, CancellationToken)"/> yields them.</summary>
        public async IAsyncEnumerable<NarrationPiece> Narrate(RunRequest request,
            [EnumeratorCancellation] CancellationToken cancellationToken = default)
        {
            await foreach (var e in Run(request, cancellationToken).ConfigureAwait(false))
            {
                if (e.KindCase == RunEvent.KindOneofCase.Text) yield return NarrationPiece.From(e.Text);
            }
        }

        /// <summary>A Continue (the actor carries on from its last reply), as it streams, in the pieces
        /// <see cref="Narrate(string, string, string, CancellationToken)"/> yields.</summary>
        public IAsyncEnumerable<NarrationPiece> ContinueStory(string sessionId, string actorId = "",
            CancellationToken cancellationToken = default) =>
            Narrate(new RunRequest { SessionId = sessionId, ActorId = actorId, ContinueStory = new ContinueInput() }, cancellationToken);

        /// <summary>
        /// Has <paramref name="actorId"/> choose one of <paramref name="options"/> and returns its choice:
        /// <c>ActionId</c> is the game's ID from the option, <c>Index</c> its position, <c>Message</c> what the
        /// actor says. Throws SidecarException with reason INVALID_CHOICE when the model gave no valid choice
        /// within the attempts (DecisionInput.MaxAttempts), as any run error otherwise.
        /// </summary>
        public Task<ChosenAction> DecideAsync(string sessionId, string actorId, string situation,
            IEnumerable<ActionOption> options, CancellationToken cancellationToken = default)
        {
            var decision = new DecisionInput { Situation = situation };
            decision.Options.AddRange(options);
            return DecideAsync(new RunRequest { SessionId = sessionId, ActorId = actorId, Decision = decision }, cancellationToken);
        }

        /// <summary>The choice of a decision run built by the game (focus, limits, profile...); see the overload.</summary>
        public async Task<ChosenAction> DecideAsync(RunRequest request, CancellationToken cancellationToken = default)
        {
            if (request.InputCase != RunRequest.InputOneofCase.Decision)
                throw new ArgumentException("DecideAsync needs a RunRequest with Decision set", nameof(request));
            ChosenAction? chosen = null;
            await foreach (var e in Run(request, cancellationToken).ConfigureAwait(false))
            {
                if (e.KindCase == RunEvent.KindOneofCase.Action) chosen = e.Action;
            }
            // The sidecar ends a decision run with an action or an error; anything else is a protocol fault.
            return chosen ?? throw new SidecarException(StatusCode.Internal, "",
                $"the decision run in session '{request.SessionId}' ended without a ChosenAction");
        }

        /// <summary>Asks the sidecar to cancel a run by ID; its stream then ends with CANCELLED / RUN_CANCELLED.
        /// Throws SidecarNotFoundException (RUN_NOT_FOUND) when it is no longer running.</summary>
        public Task<CancelRunResponse> CancelRunAsync(string runId, CancellationToken cancellationToken = default) =>
            Unary((c, o) => c.Agent.CancelRunAsync(new CancelRunRequest { RunId = runId }, o), cancellationToken);

        /// <summary>The prompt a run would send, with each section's tokens; nothing is sent to a model or recorded.</summary>
        public Task<PreviewPromptResponse> PreviewPromptAsync(RunRequest run, CancellationToken cancellationToken = default) =>
            Unary((c, o) => c.Agent.PreviewPromptAsync(new PreviewPromptRequest { Run = run }, o), cancellationToken);

        /// <summary>A page of the session's transcript (what was said, by whom, with mentions).</summary>
        public Task<ReadTranscriptResponse> ReadTranscriptAsync(ReadTranscriptRequest request, CancellationToken cancellationToken = default) =>
            Unary((c, o) => c.Agent.ReadTranscriptAsync(request, o), cancellationToken);

        /// <summary>Closes the channel.</summary>
        public void Dispose() => _connection.Dispose();

        /// <summary>A fresh ID (delta IDs, run IDs).</summary>
        public static string NewId() => Guid.NewGuid().ToString("N");

        /// <summary>A restart brought a new process: later calls go to it; the old channel is closed.</summary>
        internal void Swap(SidecarConnection next)
        {
            var old = _connection;
            _connection = next;
            old.Dispose();
        }

        /// <summary>A write this client saw acknowledged: keep the session's tracker current.</summary>
        internal void Observed(string sessionId, long revision, bool exact)
        {
            if (_tracked.TryGetValue(sessionId, out var session)) session.Observe(revision, exact);
        }

        /// <summary>The connection to call on; SidecarGoneException at once when its process has ended.</summary>
        private SidecarConnection Current()
        {
            var connection = _connection;
            connection.ThrowIfGone();
            return connection;
        }

        /// <summary>A client-streaming call carrying <paramref name="data"/> (a serialized request) in
        /// <see cref="ChunkBytes"/> pieces.</summary>
        private async Task<TResponse> Chunked<TRequest, TResponse>(
            Func<SidecarConnection, CallOptions, AsyncClientStreamingCall<TRequest, TResponse>> start,
            byte[] data, Func<ByteString, TRequest> piece, CancellationToken cancellationToken)
        {
            var connection = Current();
            using var linked = connection.Link(cancellationToken);
            try
            {
                using var call = start(connection, Options(connection, linked?.Token ?? cancellationToken, unary: true));
                try
                {
                    for (var at = 0; at < data.Length; at += ChunkBytes)
                        await call.RequestStream.WriteAsync(piece(ByteString.CopyFrom(data, at, Math.Min(ChunkBytes, data.Length - at))))
                            .ConfigureAwait(false);
                    await call.RequestStream.CompleteAsync().ConfigureAwait(false);
                }
                catch (Exception e) when (e is InvalidOperationException || e is System.IO.IOException || e is RpcException)
                {
                    // The sidecar ended the call while pieces were still going (it refused the request):
                    // its status, awaited below, says why.
                }
                return await call.ResponseAsync.ConfigureAwait(false);
            }
            catch (RpcException e)
            {
                throw await connection.TranslateAsync(e, cancellationToken).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (connection.GoneInstead(cancellationToken) != null)
            {
                throw connection.GoneInstead(cancellationToken)!;
            }
        }

        private async Task<T> Unary<T>(Func<SidecarConnection, CallOptions, AsyncUnaryCall<T>> start, CancellationToken cancellationToken)
        {
            var connection = Current();
            using var linked = connection.Link(cancellationToken);
            try
            {
                using var call = start(connection, Options(connection, linked?.Token ?? cancellationToken, unary: true));
                return await call.ResponseAsync.ConfigureAwait(false);
            }
            catch (RpcException e)
            {
                throw await connection.TranslateAsync(e, cancellationToken).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (connection.GoneInstead(cancellationToken) != null)
            {
                throw connection.GoneInstead(cancellationToken)!;
            }
        }
    }
}
