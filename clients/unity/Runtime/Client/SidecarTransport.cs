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
    /// <summary>Builds the gRPC channel to a sidecar from its handshake.</summary>
    public static class SidecarTransport
    {
        /// <summary>Whether this build of the library has an HTTP/2 handler of its own (SocketsHttpHandler,
        /// .NET 5+). The netstandard2.1 build (Unity) has none: Mono's HttpClient cannot speak cleartext HTTP/2.</summary>
        internal const bool HasBuiltInHandler =
#if NET5_0_OR_GREATER
            true;
#else
            false;
#endif

        /// <summary>What a launch or a channel without a usable handler fails with: the fix.</summary>
        internal const string NoHandlerMessage =
            "no HTTP/2 handler for the sidecar: this runtime (netstandard2.1: Unity's Mono or IL2CPP) cannot speak " +
            "cleartext HTTP/2 by itself. Set SidecarHost.HttpHandlerFactory (Unity) or " +
            "SidecarClientOptions.HttpHandlerFactory to Cysharp's YetAnotherHttpHandler with Http2Only = true and " +
            "UnixDomainSocketPath = handshake.Address on a Unix socket (docs/unity.md section 3)";

        /// <summary>Throws (before anything is started) when <paramref name="options"/> give no usable handler.</summary>
        internal static void EnsureHandler(SidecarClientOptions options)
        {
            if (options.HttpHandlerFactory == null && !options.BuiltInHandler)
                throw new SidecarNoHttpHandlerException(NoHandlerMessage + "; the sidecar was not started.");
        }

        /// <summary>A channel to the sidecar of <paramref name="handshake"/>: the factory's handler, else the built-in
        /// one without a proxy. Throws NotSupportedException when this runtime has no usable handler.</summary>
        public static GrpcChannel CreateChannel(Handshake handshake, SidecarClientOptions options)
        {
            if (options.HttpHandlerFactory == null && !options.BuiltInHandler) throw new NotSupportedException(NoHandlerMessage);
            var channelOptions = new GrpcChannelOptions
            {
                MaxReceiveMessageSize = options.MaxReceiveBytes,
                DisposeHttpClient = true,
            };
            if (options.HttpHandlerFactory != null)
            {
                channelOptions.HttpHandler = options.HttpHandlerFactory(handshake);
            }
#if NET5_0_OR_GREATER
            else
            {
                channelOptions.HttpHandler = LocalHandler(handshake.IsUnix ? handshake.Address : null, options);
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
