#nullable enable
// The one exception a sidecar call throws: the gRPC status plus the sidecar's
// stable reason (proto/sidecar/v1/errors.proto, e.g. "STALE_REVISION") and the
// google.rpc.ErrorInfo metadata. Subclasses exist only for what a game branches on.
using System;
using System.Collections.Generic;
using Grpc.Core;

namespace GameSidecar.Client
{
    public class SidecarException : Exception
    {
        private static readonly IReadOnlyDictionary<string, string> NoMetadata = new Dictionary<string, string>();

        public StatusCode StatusCode { get; }
        /// <summary>ErrorReason name without its prefix ("STALE_REVISION"); "" when the error did not come from the sidecar.</summary>
        public string Reason { get; }
        /// <summary>The sidecar's developer-readable message.</summary>
        public string Detail { get; }
        /// <summary>ErrorInfo metadata, e.g. {"current_revision": "7"} for STALE_REVISION.</summary>
        public IReadOnlyDictionary<string, string> Metadata { get; }

        public SidecarException(StatusCode code, string reason, string detail,
            IReadOnlyDictionary<string, string>? metadata = null, Exception? inner = null)
            : base(Format(code, reason, detail), inner)
        {
            StatusCode = code;
            Reason = reason;
            Detail = detail;
            Metadata = metadata ?? NoMetadata;
        }

        /// <summary>"ABORTED/STALE_REVISION: base revision 3 is stale (current 4)", as the C++ Status prints.</summary>
        public static string Format(StatusCode code, string reason, string detail)
        {
            var text = StatusCodeName(code);
            if (!string.IsNullOrEmpty(reason)) text += "/" + reason;
            if (!string.IsNullOrEmpty(detail)) text += ": " + detail;
            return text;
        }

        public static string StatusCodeName(StatusCode code) => code switch
        {
            StatusCode.OK => "OK",
            StatusCode.Cancelled => "CANCELLED",
            StatusCode.Unknown => "UNKNOWN",
            StatusCode.InvalidArgument => "INVALID_ARGUMENT",
            StatusCode.DeadlineExceeded => "DEADLINE_EXCEEDED",
            StatusCode.NotFound => "NOT_FOUND",
            StatusCode.AlreadyExists => "ALREADY_EXISTS",
            StatusCode.PermissionDenied => "PERMISSION_DENIED",
            StatusCode.ResourceExhausted => "RESOURCE_EXHAUSTED",
            StatusCode.FailedPrecondition => "FAILED_PRECONDITION",
            StatusCode.Aborted => "ABORTED",
            StatusCode.OutOfRange => "OUT_OF_RANGE",
            StatusCode.Unimplemented => "UNIMPLEMENTED",
            StatusCode.Internal => "INTERNAL",
            StatusCode.Unavailable => "UNAVAILABLE",
            StatusCode.DataLoss => "DATA_LOSS",
            StatusCode.Unauthenticated => "UNAUTHENTICATED",
            _ => "UNKNOWN_CODE",
        };
    }

    /// <summary>
    /// UNAVAILABLE / SIDECAR_GONE: the sidecar process ended (or was declared hung and killed).
    /// Every in-flight run and delta stream ends with it, and every new call fails with it at once
    /// until a restart (if a RestartPolicy is set) brings the sidecar back. Distinct from
    /// PROVIDER_UNAVAILABLE (the model's server, not the sidecar).
    /// </summary>
    public sealed class SidecarGoneException : SidecarException
    {
        /// <summary>The stable reason string.</summary>
        public const string ReasonValue = "SIDECAR_GONE";

        /// <summary>Builds the error for an ended sidecar reached at <paramref name="endpoint"/>.</summary>
        public SidecarGoneException(SidecarExit exit, string endpoint, Exception? inner = null)
            : base(StatusCode.Unavailable, ReasonValue, $"the sidecar at {endpoint} is gone: {exit}", null, inner)
        {
            Exit = exit;
            Endpoint = endpoint;
        }

        /// <summary>How the process ended.</summary>
        public SidecarExit Exit { get; }
        /// <summary>Where it was reached: "unix:/path/sidecar.sock" or "host:port".</summary>
        public string Endpoint { get; }
    }

    /// <summary>ABORTED / STALE_REVISION: the base revision was not current; nothing changed.</summary>
    public sealed class StaleRevisionException : SidecarException
    {
        /// <summary>The session's revision now (from ErrorInfo metadata "current_revision"), or null if absent.</summary>
        public long? CurrentRevision { get; }

        public StaleRevisionException(StatusCode code, string reason, string detail, IReadOnlyDictionary<string, string> metadata, Exception? inner)
            : base(code, reason, detail, metadata, inner)
        {
            CurrentRevision = metadata.TryGetValue("current_revision", out var v) && long.TryParse(v, out var r) ? r : (long?)null;
        }
    }

    /// <summary>NOT_FOUND: an unknown session, run or model profile (<see cref="SidecarException.Reason"/> says which).</summary>
    public sealed class SidecarNotFoundException : SidecarException
    {
        public SidecarNotFoundException(StatusCode code, string reason, string detail, IReadOnlyDictionary<string, string> metadata, Exception? inner)
            : base(code, reason, detail, metadata, inner) { }
    }

    /// <summary>UNAUTHENTICATED: a missing or wrong token; the sidecar touched nothing.</summary>
    public sealed class SidecarUnauthenticatedException : SidecarException
    {
        public SidecarUnauthenticatedException(StatusCode code, string reason, string detail, IReadOnlyDictionary<string, string> metadata, Exception? inner)
            : base(code, reason, detail, metadata, inner) { }
    }

    /// <summary>RESOURCE_EXHAUSTED / QUEUE_FULL: too many runs waiting; try again later.</summary>
    public sealed class QueueFullException : SidecarException
    {
        /// <summary>The queue length at refusal (ErrorInfo metadata "queue_length"), or null if absent.</summary>
        public int? QueueLength { get; }

        public QueueFullException(StatusCode code, string reason, string detail, IReadOnlyDictionary<string, string> metadata, Exception? inner)
            : base(code, reason, detail, metadata, inner)
        {
            QueueLength = metadata.TryGetValue("queue_length", out var v) && int.TryParse(v, out var n) ? n : (int?)null;
        }
    }

    /// <summary>INTERNAL / PRIVACY_LEAK_BLOCKED: a model request held an engine ID and was not sent (a sidecar bug; it is logged).</summary>
    public sealed class PrivacyBlockedException : SidecarException
    {
        public PrivacyBlockedException(StatusCode code, string reason, string detail, IReadOnlyDictionary<string, string> metadata, Exception? inner)
            : base(code, reason, detail, metadata, inner) { }
    }
}
