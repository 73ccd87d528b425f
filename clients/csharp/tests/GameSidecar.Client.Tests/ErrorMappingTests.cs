// SidecarErrors is the one place gRPC failures become exceptions: every reason in
// errors.proto maps, the subclasses a game branches on are picked, and the
// ErrorInfo in grpc-status-details-bin is read (and only from our domain).
using System;
using System.Collections.Generic;
using System.Linq;
using Google.Protobuf;
using GameSidecar.Client;
using GameSidecar.V1;
using Grpc.Core;
using Xunit;

namespace GameSidecar.Client.Tests
{
    public class ErrorMappingTests
    {
        private static readonly IReadOnlyDictionary<string, string> None = new Dictionary<string, string>();

        // The reason names on the wire: the enum's proto names without the ERROR_REASON_ prefix.
        public static IEnumerable<object[]> Reasons() =>
            ErrorsReflection.Descriptor.EnumTypes.Single(t => t.Name == "ErrorReason").Values.Where(v => v.Number != 0)
                .Select(v => new object[] { v.Name.Substring("ERROR_REASON_".Length), v.Number });

        [Theory]
        [MemberData(nameof(Reasons))]
        public void EveryReasonMapsToASidecarExceptionCarryingIt(string reason, int number)
        {
            var e = SidecarErrors.Create(StatusCode.Internal, reason, "details", None, null);
            Assert.Equal(reason, e.ReasonName);
            Assert.Equal((ErrorReason)number, e.Reason);
            Assert.Equal("INTERNAL/" + reason + ": details", e.Message);
            var expected = reason switch
            {
                "STALE_REVISION" => typeof(StaleRevisionException),
                "QUEUE_FULL" => typeof(QueueFullException),
                "PRIVACY_LEAK_BLOCKED" => typeof(PrivacyBlockedException),
                "DELTA_ID_REUSED" => typeof(DeltaIdReusedException),
                _ => typeof(SidecarException),
            };
            Assert.Equal(expected, e.GetType());
        }

        [Fact]
        public void StatusCodesPickNotFoundAndUnauthenticated()
        {
            Assert.IsType<SidecarNotFoundException>(SidecarErrors.Create(StatusCode.NotFound, "RUN_NOT_FOUND", "", None, null));
            Assert.IsType<SidecarNotFoundException>(SidecarErrors.Create(StatusCode.NotFound, "", "", None, null));
            Assert.IsType<SidecarUnauthenticatedException>(SidecarErrors.Create(StatusCode.Unauthenticated, "UNAUTHENTICATED", "", None, null));
            Assert.IsType<SidecarException>(SidecarErrors.Create(StatusCode.Unavailable, "", "connection refused", None, null));
        }

        [Fact]
        public void ReadsReasonAndMetadataFromStatusDetails()
        {
            var trailers = new Metadata { { SidecarErrors.StatusDetailsKey, StatusDetails("game-sidecar", "STALE_REVISION", ("current_revision", "7")) } };
            var e = SidecarErrors.FromRpc(new RpcException(new Status(StatusCode.Aborted, "base revision 3 is stale"), trailers));
            var stale = Assert.IsType<StaleRevisionException>(e);
            Assert.Equal(7, stale.CurrentRevision);
            Assert.Equal("ABORTED/STALE_REVISION: base revision 3 is stale", e.Message);
        }

        [Fact]
        public void TheReasonTrailerWinsAndAForeignDomainIsIgnored()
        {
            var trailers = new Metadata
            {
                { SidecarErrors.ReasonKey, "QUEUE_FULL" },
                { SidecarErrors.StatusDetailsKey, StatusDetails("some-proxy", "OVERLOADED", ("queue_length", "99")) },
            };
            var e = SidecarErrors.FromRpc(new RpcException(new Status(StatusCode.ResourceExhausted, "full"), trailers));
            var full = Assert.IsType<QueueFullException>(e);
            Assert.Null(full.QueueLength);
            Assert.Empty(e.Metadata);
        }

        [Fact]
        public void GarbledDetailsLeaveTheTrailerReason()
        {
            var trailers = new Metadata
            {
                { SidecarErrors.ReasonKey, "INTERNAL" },
                { SidecarErrors.StatusDetailsKey, new byte[] { 0x1a, 0xff, 0x01 } },
            };
            var e = SidecarErrors.FromRpc(new RpcException(new Status(StatusCode.Internal, "bug"), trailers));
            Assert.Equal("INTERNAL", e.ReasonName);
        }

        [Fact]
        public void CancelledIsOperationCanceledOnlyWhenTheCallerCancelled()
        {
            var trailers = new Metadata { { SidecarErrors.ReasonKey, "RUN_CANCELLED" } };
            var rpc = new RpcException(new Status(StatusCode.Cancelled, "cancelled"), trailers);
            using var cts = new System.Threading.CancellationTokenSource();
            var fromServer = Assert.IsType<SidecarException>(SidecarErrors.Translate(rpc, cts.Token));
            Assert.Equal("RUN_CANCELLED", fromServer.ReasonName);
            cts.Cancel();
            var mine = Assert.IsType<OperationCanceledException>(SidecarErrors.Translate(rpc, cts.Token));
            Assert.Equal(cts.Token, mine.CancellationToken);
        }

        [Fact]
        public void AStreamDetailIsTheUnaryException()
        {
            var detail = new ErrorDetail { Code = (int)StatusCode.Aborted, Reason = "STALE_REVISION", Message = "stale" };
            detail.Metadata.Add("current_revision", "12");
            var e = Assert.IsType<StaleRevisionException>(SidecarErrors.FromDetail(detail));
            Assert.Equal(StatusCode.Aborted, e.StatusCode);
            Assert.Equal(12, e.CurrentRevision);
        }

        // google.rpc.Status{code, message, details=[Any{type_url, ErrorInfo{reason, domain, metadata}}]}
        private static byte[] StatusDetails(string domain, string reason, params (string Key, string Value)[] metadata)
        {
            var info = new List<byte>();
            info.AddRange(Field(1, Encoding(reason)));
            info.AddRange(Field(2, Encoding(domain)));
            foreach (var (k, v) in metadata) info.AddRange(Field(3, Field(1, Encoding(k)).Concat(Field(2, Encoding(v))).ToArray()));
            var any = Field(1, Encoding("type.googleapis.com/google.rpc.ErrorInfo")).Concat(Field(2, info.ToArray())).ToArray();
            return new byte[] { 0x08, 10 }.Concat(Field(2, Encoding("msg"))).Concat(Field(3, any)).ToArray();
        }

        private static byte[] Encoding(string s) => System.Text.Encoding.UTF8.GetBytes(s);

        private static byte[] Field(int number, byte[] payload)
        {
            var header = new byte[CodedOutputStream.ComputeTagSize(number) + CodedOutputStream.ComputeLengthSize(payload.Length)];
            var output = new CodedOutputStream(header);
            output.WriteTag(number, WireFormat.WireType.LengthDelimited);
            output.WriteLength(payload.Length);
            output.Flush();
            return header.Concat(payload).ToArray();
        }
    }
}
