#nullable enable
// Builds the gRPC channel for a handshake: a Unix socket through
// SocketsHttpHandler.ConnectCallback on .NET 5+, TCP loopback where the sidecar
// listens on TCP, or whatever HttpMessageHandler the game injects (Unity). The
// sidecar is always local, so the handlers built here never use a proxy.
using System;
using System.Net.Http;
using Grpc.Net.Client;
#if NET5_0_OR_GREATER
using System.Net;
using System.Net.Sockets;
#endif

namespace GameSidecar.Client
{
    public static class SidecarTransport
    {
        public static GrpcChannel CreateChannel(Handshake handshake, SidecarClientOptions options)
        {
            var channelOptions = new GrpcChannelOptions
            {
                MaxReceiveMessageSize = options.MaxReceiveBytes,
                DisposeHttpClient = true,
            };
            if (options.HttpHandlerFactory != null)
            {
                channelOptions.HttpHandler = options.HttpHandlerFactory(handshake);
            }
            else if (handshake.IsUnix)
            {
#if NET5_0_OR_GREATER
                channelOptions.HttpHandler = LocalHandler(handshake.Address, options);
#else
                throw new NotSupportedException(
                    "this runtime has no SocketsHttpHandler: set SidecarClientOptions.HttpHandlerFactory to an " +
                    "HTTP/2 handler that can reach a Unix socket (docs/unity.md), or launch with --listen tcp://127.0.0.1:0");
#endif
            }
#if NET5_0_OR_GREATER
            else
            {
                channelOptions.HttpHandler = LocalHandler(unixPath: null, options);
            }
#endif
            // The authority is never used to route on a Unix socket; "localhost" keeps it valid (errors
            // name the socket instead: SidecarConnection.TranslateAsync).
            var address = handshake.IsUnix ? "http://localhost" : "http://" + handshake.Address;
            return GrpcChannel.ForAddress(address, channelOptions);
        }

#if NET5_0_OR_GREATER
        private static HttpMessageHandler LocalHandler(string? unixPath, SidecarClientOptions options)
        {
            var handler = new SocketsHttpHandler
            {
                // A proxy from the player's environment (HTTP_PROXY, http_proxy) would otherwise be
                // asked for the sidecar's address: every call then failed with "unable to establish
                // HTTP/2 connection" (HTTP/2 without TLS cannot go through a proxy), on a Unix socket too.
                UseProxy = false,
                // One long-lived local connection; gRPC multiplexes calls over it.
                EnableMultipleHttp2Connections = false,
            };
            if (options.KeepAlivePingDelay > TimeSpan.Zero)
            {
                // A connection whose peer stopped answering is dropped instead of waited on forever
                // (LivenessMonitor then tells a hung sidecar from a dead one).
                handler.KeepAlivePingDelay = options.KeepAlivePingDelay;
                handler.KeepAlivePingTimeout = options.KeepAlivePingTimeout;
                handler.KeepAlivePingPolicy = HttpKeepAlivePingPolicy.Always;
            }
            if (unixPath == null) return handler;
            var endpoint = new UnixDomainSocketEndPoint(unixPath);
            handler.ConnectCallback = async (context, cancellationToken) =>
            {
                var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
                try
                {
                    await socket.ConnectAsync(endpoint, cancellationToken).ConfigureAwait(false);
                    return new NetworkStream(socket, ownsSocket: true);
                }
                catch
                {
                    socket.Dispose();
                    throw;
                }
            };
            return handler;
        }
#endif
    }
}
