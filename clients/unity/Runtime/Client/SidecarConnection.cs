#nullable enable
// One channel to one sidecar process, with what SidecarClient needs to fail its calls
// truthfully when that process ends: a cancellation source every call is linked to
// (cancelled the moment the exit is seen, so in-flight runs and streams end at once),
// the exit record, and a probe that asks whether a broken call means the process is gone.
// After a supervised restart SidecarClient swaps in a new connection.
using System;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.V1;
using Grpc.Core;
using Grpc.Net.Client;

namespace GameSidecar.Client
{
    internal sealed class SidecarConnection : IDisposable
    {
        // Never disposed: streams still register on its token after a restart closed this connection.
        private readonly CancellationTokenSource _gone = new CancellationTokenSource();
        private volatile SidecarExit? _exit;

        public SidecarConnection(Handshake handshake, string token, SidecarClientOptions options, ISidecarLifeline? lifeline)
        {
            // Plain metadata, not CallCredentials: gRPC drops call credentials on insecure channels.
            Auth = new Metadata { { "authorization", "Bearer " + token } };
            Endpoint = handshake.Target;
            Channel = SidecarTransport.CreateChannel(handshake, options);
            Sidecar = new SidecarService.SidecarServiceClient(Channel);
            Sessions = new SessionService.SessionServiceClient(Channel);
            Agent = new AgentService.AgentServiceClient(Channel);
            Lifeline = lifeline;
        }

        public Metadata Auth { get; }
        /// <summary>"unix:/path/sidecar.sock" or "host:port": what error messages name.</summary>
        public string Endpoint { get; }
        public GrpcChannel Channel { get; }
        public SidecarService.SidecarServiceClient Sidecar { get; }
        public SessionService.SessionServiceClient Sessions { get; }
        public AgentService.AgentServiceClient Agent { get; }
        /// <summary>The launched process behind this channel; null for a client made from a handshake alone.</summary>
        public ISidecarLifeline? Lifeline { get; }
        public SidecarExit? Exit => _exit;
        public CancellationToken GoneToken => _gone.Token;

        /// <summary>The process ended: remember how, and end every call linked to this connection.</summary>
        public void MarkGone(SidecarExit exit)
        {
            if (_exit != null) return;
            _exit = exit;
            try
            {
                _gone.Cancel();
            }
            catch (AggregateException)
            {
                // A caller's cancellation callback threw; the calls are cancelled regardless.
            }
        }

        /// <summary>Throws SidecarGoneException when the process behind this connection has ended.</summary>
        public void ThrowIfGone()
        {
            var exit = _exit;
            if (exit != null) throw Gone(exit, null);
        }

        /// <summary>A token that ends when the caller's does or when the process does; null when there is no process to watch.</summary>
        public CancellationTokenSource? Link(CancellationToken cancellationToken) =>
            Lifeline == null ? null : CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, _gone.Token);

        /// <summary>
        /// What a failed call throws. A transport-level failure (the connection broke, the call was cut)
        /// while a process is watched asks the lifeline whether the process ended: then it is
        /// SidecarGoneException, carrying the exit. Messages name the real endpoint.
        /// </summary>
        public async Task<Exception> TranslateAsync(RpcException e, CancellationToken cancellationToken)
        {
            if (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
                return new OperationCanceledException(e.Status.Detail, e, cancellationToken);
            if (_exit == null && Lifeline != null && IsTransportFailure(e))
                await Lifeline.ProbeAsync(this).ConfigureAwait(false);
            var exit = _exit;
            if (exit != null) return Gone(exit, e);
            var error = SidecarErrors.Translate(e, cancellationToken);
            if (error is SidecarException s && string.IsNullOrEmpty(s.ReasonName) && !s.Detail.Contains(Endpoint))
                return SidecarErrors.Create(s.StatusCode, s.ReasonName, NameEndpoint(s.Detail), s.Metadata, e);
            return error;
        }

        /// <summary>
        /// A stream write that failed below gRPC (an IOException from the dead connection): SidecarGoneException
        /// when the process ended, else UNAVAILABLE naming the endpoint.
        /// </summary>
        public async Task<Exception> TranslateIoAsync(System.IO.IOException e)
        {
            if (_exit == null && Lifeline != null) await Lifeline.ProbeAsync(this).ConfigureAwait(false);
            var exit = _exit;
            if (exit != null) return Gone(exit, e);
            return new SidecarException(StatusCode.Unavailable, "", NameEndpoint(e.Message), null, e);
        }

        /// <summary>The caller did not cancel, but the call was cut because the process ended.</summary>
        public Exception? GoneInstead(CancellationToken cancellationToken)
        {
            var exit = _exit;
            return exit != null && !cancellationToken.IsCancellationRequested ? Gone(exit, null) : null;
        }

        private SidecarGoneException Gone(SidecarExit exit, Exception? inner) =>
            new SidecarGoneException(exit, Endpoint, inner, restarts: Lifeline != null && Lifeline.Restarts);

        public void Dispose()
        {
            Channel.Dispose();
        }

        // The transport's own text names the placeholder authority of a Unix socket
        // ("Connection refused (localhost:80)"): say where the sidecar really is.
        private string NameEndpoint(string detail)
        {
            const string placeholder = "localhost:80";
            return detail.Contains(placeholder)
                ? detail.Replace(placeholder, Endpoint)
                : detail + " (sidecar at " + Endpoint + ")";
        }

        private static bool IsTransportFailure(RpcException e)
        {
            foreach (var entry in e.Trailers)
            {
                if (entry.Key == SidecarErrors.ReasonKey) return false; // the sidecar answered
            }
            switch (e.StatusCode)
            {
                case StatusCode.Unavailable:
                case StatusCode.Internal:
                case StatusCode.Unknown:
                case StatusCode.Cancelled:
                case StatusCode.DeadlineExceeded:
                    return true;
                default:
                    return false;
            }
        }
    }

    /// <summary>What SidecarProcess gives a connection to ask about the process behind it.</summary>
    internal interface ISidecarLifeline
    {
        /// <summary>After a broken call: find out (briefly) whether the process ended or is being declared
        /// hung; when it did, <paramref name="connection"/> is marked gone before this returns.</summary>
        Task ProbeAsync(SidecarConnection connection);

        /// <summary>A RestartPolicy relaunches the process after an exit the game did not ask for.</summary>
        bool Restarts { get; }
    }
}
