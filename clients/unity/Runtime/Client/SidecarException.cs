#nullable enable
// The one exception a sidecar call throws: the gRPC status plus the sidecar's
// stable reason (proto/sidecar/v1/errors.proto, as the generated enum ErrorReason)
// and the google.rpc.ErrorInfo metadata. Subclasses exist only for what a game branches on.
using System;
using System.Collections.Generic;
using GameSidecar.V1;
using Google.Protobuf.Reflection;
using Grpc.Core;

namespace GameSidecar.Client
{
    /// <summary>A failed sidecar call: its gRPC status, the sidecar's stable reason, message and metadata.</summary>
    public class SidecarException : Exception
    {
        private static readonly IReadOnlyDictionary<string, string> NoMetadata = new Dictionary<string, string>();
        private static readonly EnumDescriptor ReasonEnum = ErrorsReflection.Descriptor.FindTypeByName<EnumDescriptor>("ErrorReason");

        /// <summary>The call's gRPC status code.</summary>
        public StatusCode StatusCode { get; }
        /// <summary>The sidecar's stable reason (errors.proto), e.g. <see cref="ErrorReason.StaleRevision"/>;
        /// <see cref="ErrorReason.Unspecified"/> when the error did not come from the sidecar (a transport
        /// failure) or carries a reason this client does not know (<see cref="ReasonName"/> still has it).</summary>
        public ErrorReason Reason { get; }
        /// <summary>The reason as it came on the wire, without its prefix ("STALE_REVISION"); "" when none.</summary>
        public string ReasonName { get; }
        /// <summary>The sidecar's developer-readable message.</summary>
        public string Detail { get; }
        /// <summary>ErrorInfo metadata, e.g. {"current_revision": "7"} for STALE_REVISION.</summary>
        public IReadOnlyDictionary<string, string> Metadata { get; }

        /// <summary>
        /// True when the same request, sent again unchanged, may succeed later (after a wait or backoff):
        /// QUEUE_FULL, PROVIDER_TIMEOUT, PROVIDER_RATE_LIMITED, PROVIDER_UNAVAILABLE and STORAGE_FULL (once
        /// space is freed); SIDECAR_GONE when a RestartPolicy relaunches the sidecar (see
        /// <see cref="SidecarGoneException"/>). False for everything else, notably STALE_REVISION (the
        /// same base fails again: catch up first, as TrackedSession does), SHUTTING_DOWN (the sidecar is
        /// going away), RUN_CANCELLED, the INVALID_* reasons and INTERNAL.
        /// </summary>
        public virtual bool IsRetryable => IsRetryableReason(Reason);

        /// <summary>Builds the exception; <paramref name="reason"/> is the wire name ("STALE_REVISION", or "").</summary>
        public SidecarException(StatusCode code, string reason, string detail,
            IReadOnlyDictionary<string, string>? metadata = null, Exception? inner = null)
            : base(Format(code, reason, detail), inner)
        {
            StatusCode = code;
            ReasonName = reason ?? "";
            Reason = ParseReason(ReasonName);
            Detail = detail;
            Metadata = metadata ?? NoMetadata;
        }

        /// <summary>The reasons whose request may succeed if sent again unchanged (<see cref="IsRetryable"/>).</summary>
        public static bool IsRetryableReason(ErrorReason reason) => reason switch
        {
            ErrorReason.QueueFull => true,
            ErrorReason.ProviderTimeout => true,
            ErrorReason.ProviderRateLimited => true,
            ErrorReason.ProviderUnavailable => true,
            ErrorReason.StorageFull => true,
            _ => false,
        };

        /// <summary>The enum value of a wire reason name ("STALE_REVISION"); Unspecified for "" or an unknown name
        /// (a newer sidecar's reason).</summary>
        public static ErrorReason ParseReason(string name)
        {
            if (string.IsNullOrEmpty(name)) return ErrorReason.Unspecified;
            var value = ReasonEnum.FindValueByName("ERROR_REASON_" + name);
            return value == null ? ErrorReason.Unspecified : (ErrorReason)value.Number;
        }

        /// <summary>"ABORTED/STALE_REVISION: base revision 3 is stale (current 4)", as the C++ Status prints.</summary>
        public static string Format(StatusCode code, string reason, string detail)
        {
            var text = StatusCodeName(code);
            if (!string.IsNullOrEmpty(reason)) text += "/" + reason;
            if (!string.IsNullOrEmpty(detail)) text += ": " + detail;
            return text;
        }

        /// <summary>The status code as gRPC spells it ("RESOURCE_EXHAUSTED").</summary>
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

        /// <summary>Builds the error for an ended sidecar reached at <paramref name="endpoint"/>;
        /// <paramref name="restarts"/>: a RestartPolicy will relaunch it.</summary>
        public SidecarGoneException(SidecarExit exit, string endpoint, Exception? inner = null, bool restarts = false)
            : base(StatusCode.Unavailable, ReasonValue, $"the sidecar at {endpoint} is gone: {exit}", null, inner)
        {
            Exit = exit;
            Endpoint = endpoint;
            WillRestart = restarts && !exit.Requested;
        }

        /// <summary>True when the exit was not asked for and a RestartPolicy relaunches the sidecar (it had not
        /// given up when this was thrown): the call may be retried once the status is Ready again
        /// (SidecarProcess.StatusChanged / Restarted). A policy that gives up later leaves the status Failed,
        /// and the retry fails with this exception again.</summary>
        public bool WillRestart { get; }

        /// <summary>Same as <see cref="WillRestart"/>: without a restart the sidecar stays gone.</summary>
        public override bool IsRetryable => WillRestart;

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

        /// <summary>Builds it (SidecarErrors.Create does).</summary>
        public StaleRevisionException(StatusCode code, string reason, string detail, IReadOnlyDictionary<string, string> metadata, Exception? inner)
            : base(code, reason, detail, metadata, inner)
        {
            CurrentRevision = metadata.TryGetValue("current_revision", out var v) && long.TryParse(v, out var r) ? r : (long?)null;
        }
    }

    /// <summary>NOT_FOUND: an unknown session, run or model profile (<see cref="SidecarException.Reason"/> says which).</summary>
    public sealed class SidecarNotFoundException : SidecarException
    {
        /// <summary>Builds it (SidecarErrors.Create does).</summary>
        public SidecarNotFoundException(StatusCode code, string reason, string detail, IReadOnlyDictionary<string, string> metadata, Exception? inner)
            : base(code, reason, detail, metadata, inner) { }
    }

    /// <summary>UNAUTHENTICATED: a missing or wrong token; the sidecar touched nothing.</summary>
    public sealed class SidecarUnauthenticatedException : SidecarException
    {
        /// <summary>Builds it (SidecarErrors.Create does).</summary>
        public SidecarUnauthenticatedException(StatusCode code, string reason, string detail, IReadOnlyDictionary<string, string> metadata, Exception? inner)
            : base(code, reason, detail, metadata, inner) { }
    }

    /// <summary>RESOURCE_EXHAUSTED / QUEUE_FULL: too many runs waiting; try again later.</summary>
    public sealed class QueueFullException : SidecarException
    {
        /// <summary>The queue length at refusal (ErrorInfo metadata "queue_length"), or null if absent.</summary>
        public int? QueueLength { get; }

        /// <summary>Builds it (SidecarErrors.Create does).</summary>
        public QueueFullException(StatusCode code, string reason, string detail, IReadOnlyDictionary<string, string> metadata, Exception? inner)
            : base(code, reason, detail, metadata, inner)
        {
            QueueLength = metadata.TryGetValue("queue_length", out var v) && int.TryParse(v, out var n) ? n : (int?)null;
        }
    }

    /// <summary>INTERNAL / PRIVACY_LEAK_BLOCKED: a model request held an engine ID and was not sent (a sidecar bug; it is logged).</summary>
    public sealed class PrivacyBlockedException : SidecarException
    {
        /// <summary>Builds it (SidecarErrors.Create does).</summary>
        public PrivacyBlockedException(StatusCode code, string reason, string detail, IReadOnlyDictionary<string, string> metadata, Exception? inner)
            : base(code, reason, detail, metadata, inner) { }
    }

    /// <summary>
    /// ALREADY_EXISTS / DELTA_ID_REUSED: the delta_id was already applied to this session with a different
    /// batch; nothing was applied. A game that restarts its delta counter must use new IDs.
    /// </summary>
    public sealed class DeltaIdReusedException : SidecarException
    {
        /// <summary>The revision the first batch with this ID produced (ErrorInfo metadata "revision"), or null if absent.</summary>
        public long? Revision { get; }

        /// <summary>Builds it (SidecarErrors.Create does).</summary>
        public DeltaIdReusedException(StatusCode code, string reason, string detail, IReadOnlyDictionary<string, string> metadata, Exception? inner)
            : base(code, reason, detail, metadata, inner)
        {
            Revision = metadata.TryGetValue("revision", out var v) && long.TryParse(v, out var r) ? r : (long?)null;
        }
    }
}
