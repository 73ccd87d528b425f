#nullable enable
// The one place that turns gRPC failures into SidecarException (and its few
// subclasses). Every call of SidecarClient and DeltaStream goes through here.
using System;
using System.Collections.Generic;
using System.Threading;
using Google.Protobuf;
using GameSidecar.V1;
using Grpc.Core;

namespace GameSidecar.Client
{
    /// <summary>The one place that maps gRPC failures to SidecarException and its subclasses.</summary>
    public static class SidecarErrors
    {
        /// <summary>The trailer that carries the sidecar's reason ("STALE_REVISION").</summary>
        public const string ReasonKey = "sidecar-reason";
        /// <summary>The trailer that carries google.rpc.Status with its ErrorInfo.</summary>
        public const string StatusDetailsKey = "grpc-status-details-bin";
        private const string ErrorInfoType = "google.rpc.ErrorInfo";
        private const string ErrorDomain = "game-sidecar";

        /// <summary>
        /// What a failed call throws: OperationCanceledException when the caller's token was
        /// cancelled (the client ended the call), else the SidecarException for its status. A
        /// CANCELLED status the sidecar sent (CancelRun, session closed) stays a SidecarException
        /// with reason RUN_CANCELLED, as in the Python and C++ clients.
        /// </summary>
        public static Exception Translate(RpcException e, CancellationToken cancellationToken)
        {
            if (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
                return new OperationCanceledException(e.Status.Detail, e, cancellationToken);
            return FromRpc(e);
        }

        /// <summary>The exception for a failed call: the reason from the `sidecar-reason`
        /// trailer, falling back to the ErrorInfo in the status details; metadata from the ErrorInfo.</summary>
        public static SidecarException FromRpc(RpcException e)
        {
            var reason = "";
            var metadata = new Dictionary<string, string>(StringComparer.Ordinal);
            foreach (var entry in e.Trailers)
            {
                if (entry.Key == ReasonKey && !entry.IsBinary) reason = entry.Value;
                else if (entry.Key == StatusDetailsKey && entry.IsBinary) ReadErrorInfo(entry.ValueBytes, ref reason, metadata);
            }
            return Create(e.StatusCode, reason, e.Status.Detail, metadata, e);
        }

        /// <summary>An in-stream ErrorDetail (StreamDeltas) as the exception the unary call would have thrown.</summary>
        public static SidecarException FromDetail(ErrorDetail detail)
        {
            var metadata = new Dictionary<string, string>(detail.Metadata, StringComparer.Ordinal);
            return Create((StatusCode)detail.Code, detail.Reason, detail.Message, metadata, null);
        }

        /// <summary>Picks the subclass a game branches on; everything else is a plain SidecarException.</summary>
        public static SidecarException Create(StatusCode code, string reason, string detail,
            IReadOnlyDictionary<string, string> metadata, Exception? inner)
        {
            switch (reason)
            {
                case "STALE_REVISION": return new StaleRevisionException(code, reason, detail, metadata, inner);
                case "QUEUE_FULL": return new QueueFullException(code, reason, detail, metadata, inner);
                case "PRIVACY_LEAK_BLOCKED": return new PrivacyBlockedException(code, reason, detail, metadata, inner);
                case "DELTA_ID_REUSED": return new DeltaIdReusedException(code, reason, detail, metadata, inner);
            }
            switch (code)
            {
                case StatusCode.NotFound: return new SidecarNotFoundException(code, reason, detail, metadata, inner);
                case StatusCode.Unauthenticated: return new SidecarUnauthenticatedException(code, reason, detail, metadata, inner);
                default: return new SidecarException(code, reason, detail, metadata, inner);
            }
        }

        // google.rpc.Status { int32 code = 1; string message = 2; repeated Any details = 3; }
        // Any { string type_url = 1; bytes value = 2; }
        // ErrorInfo { string reason = 1; string domain = 2; map<string,string> metadata = 3; }
        // Read by hand (as clients/cpp does with its own wire proto) so a game needs no
        // Google.Api.CommonProtos just for these three messages.
        private static void ReadErrorInfo(byte[] statusBytes, ref string reason, Dictionary<string, string> metadata)
        {
            try
            {
                var status = new CodedInputStream(statusBytes);
                uint tag;
                while ((tag = status.ReadTag()) != 0)
                {
                    if (tag != 26) { status.SkipLastField(); continue; } // details, field 3
                    string typeUrl = "";
                    ByteString value = ByteString.Empty;
                    var any = new CodedInputStream(status.ReadBytes().ToByteArray());
                    while ((tag = any.ReadTag()) != 0)
                    {
                        if (tag == 10) typeUrl = any.ReadString();
                        else if (tag == 18) value = any.ReadBytes();
                        else any.SkipLastField();
                    }
                    if (!typeUrl.EndsWith("/" + ErrorInfoType, StringComparison.Ordinal)) continue;
                    ReadInfo(value.ToByteArray(), ref reason, metadata);
                    return;
                }
            }
            catch (InvalidProtocolBufferException)
            {
                // Garbled details: the reason trailer (if any) still stands.
            }
        }

        private static void ReadInfo(byte[] bytes, ref string reason, Dictionary<string, string> metadata)
        {
            var info = new CodedInputStream(bytes);
            string infoReason = "", domain = "";
            var pairs = new List<KeyValuePair<string, string>>();
            uint tag;
            while ((tag = info.ReadTag()) != 0)
            {
                if (tag == 10) infoReason = info.ReadString();
                else if (tag == 18) domain = info.ReadString();
                else if (tag == 26)
                {
                    var entry = new CodedInputStream(info.ReadBytes().ToByteArray());
                    string k = "", v = "";
                    while ((tag = entry.ReadTag()) != 0)
                    {
                        if (tag == 10) k = entry.ReadString();
                        else if (tag == 18) v = entry.ReadString();
                        else entry.SkipLastField();
                    }
                    pairs.Add(new KeyValuePair<string, string>(k, v));
                }
                else info.SkipLastField();
            }
            // Only trust a reason that names our domain; a proxy could add its own.
            if (domain != ErrorDomain) return;
            if (string.IsNullOrEmpty(reason)) reason = infoReason;
            foreach (var kv in pairs) metadata[kv.Key] = kv.Value;
        }
    }
}
