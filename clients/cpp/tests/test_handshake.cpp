// Unit tests: handshake parsing and targets, error decoding, run IDs.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "game_sidecar/delta_stream.h"
#include "game_sidecar/handshake.h"
#include "game_sidecar/status.h"
#include "run_id.h"  // private (src/): the client-made run IDs
#include "status_decode.h"  // private (src/): the decoder behind every call

using game_sidecar::GrpcTarget;
using game_sidecar::Handshake;
using game_sidecar::ParseHandshake;

TEST(Handshake, ParsesUnixWithGeneratedToken) {
  Handshake h;
  std::string err;
  ASSERT_TRUE(ParseHandshake(
      R"({"sidecar":"game-sidecar","protocol":1,"transport":"unix","address":"/tmp/gs-abc/sidecar.sock",)"
      R"("token":"tok_123","pid":4242,"version":"0.1.0"})",
      &h, &err))
      << err;
  EXPECT_EQ(h.transport, "unix");
  EXPECT_EQ(h.address, "/tmp/gs-abc/sidecar.sock");
  EXPECT_EQ(h.token, "tok_123");
  EXPECT_EQ(h.pid, 4242);
  EXPECT_EQ(h.version, "0.1.0");
  EXPECT_EQ(GrpcTarget(h), "unix:/tmp/gs-abc/sidecar.sock");
}

TEST(Handshake, ParsesTcpWithoutToken) {
  Handshake h;
  std::string err;
  ASSERT_TRUE(ParseHandshake(
      R"({"sidecar":"game-sidecar","protocol":1,"transport":"tcp","address":"127.0.0.1:50123","pid":7,"version":"1.2.3"})",
      &h, &err))
      << err;
  EXPECT_TRUE(h.token.empty());
  EXPECT_EQ(GrpcTarget(h), "127.0.0.1:50123");
}

struct BadCase {
  const char* name;  // the CTest name's last part: stable across builds
  const char* line;
  const char* expected_error_part;
};

// Printed in test output instead of the struct's bytes (pointers that change every build).
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class HandshakeRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(HandshakeRejects, WithPreciseError) {
  Handshake h;
  h.address = "untouched";
  std::string err;
  EXPECT_FALSE(ParseHandshake(GetParam().line, &h, &err));
  EXPECT_NE(err.find(GetParam().expected_error_part), std::string::npos) << err;
  EXPECT_EQ(h.address, "untouched");  // a failed parse writes nothing
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HandshakeRejects,
    ::testing::Values(
        BadCase{"NotJson", "not json at all", "not a JSON object"},
        BadCase{"JsonArray", "[1,2,3]", "not a JSON object"},
        BadCase{"NoSidecarField", R"({"protocol":1,"transport":"tcp","address":"a","pid":1,"version":"1"})", "lacks \"sidecar\""},
        BadCase{"OtherTool", R"({"sidecar":"other","protocol":1,"transport":"tcp","address":"a","pid":1,"version":"1"})",
                "not game-sidecar"},
        BadCase{"OtherProtocol", R"({"sidecar":"game-sidecar","protocol":2,"transport":"tcp","address":"a","pid":1,"version":"1"})",
                "protocol 2"},
        BadCase{"UnknownTransport", R"({"sidecar":"game-sidecar","protocol":1,"transport":"pipe","address":"a","pid":1,"version":"1"})",
                "unknown handshake transport"},
        BadCase{"EmptyAddress", R"({"sidecar":"game-sidecar","protocol":1,"transport":"tcp","address":"","pid":1,"version":"1"})",
                "address is empty"},
        BadCase{"PidString", R"({"sidecar":"game-sidecar","protocol":1,"transport":"tcp","address":"a","pid":"1","version":"1"})",
                "\"pid\" is not an integer"},
        BadCase{"PidFloat", R"({"sidecar":"game-sidecar","protocol":1,"transport":"tcp","address":"a","pid":1.5,"version":"1"})",
                "\"pid\" is not an integer"},
        BadCase{"NoVersion", R"({"sidecar":"game-sidecar","protocol":1,"transport":"tcp","address":"a","pid":1})",
                "lacks \"version\""},
        BadCase{"TokenNotString", R"({"sidecar":"game-sidecar","protocol":1,"transport":"tcp","address":"a","token":5,"pid":1,"version":"1"})",
                "\"token\" is not a string"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

// The exact grpc-status-details-bin the Python sidecar sends for
// StaleRevision("base revision 3 is stale", current_revision=4), produced by
// sidecar.servicers.status.to_status.
static const char kPythonStaleDetails[] = "\x08\x0a\x12\x18\x62\x61\x73\x65\x20\x72\x65\x76\x69\x73\x69\x6f\x6e\x20\x33\x20\x69\x73\x20\x73\x74\x61\x6c\x65\x1a\x61\x0a\x28\x74\x79\x70\x65\x2e\x67\x6f\x6f\x67\x6c\x65\x61\x70\x69\x73\x2e\x63\x6f\x6d\x2f\x67\x6f\x6f\x67\x6c\x65\x2e\x72\x70\x63\x2e\x45\x72\x72\x6f\x72\x49\x6e\x66\x6f\x12\x35\x0a\x0e\x53\x54\x41\x4c\x45\x5f\x52\x45\x56\x49\x53\x49\x4f\x4e\x12\x0c\x67\x61\x6d\x65\x2d\x73\x69\x64\x65\x63\x61\x72\x1a\x15\x0a\x10\x63\x75\x72\x72\x65\x6e\x74\x5f\x72\x65\x76\x69\x73\x69\x6f\x6e\x12\x01\x34";

using game_sidecar::StatusCode;
using game_sidecar::internal::DecodeStatus;

TEST(StatusDecoding, ReadsErrorInfoFromPythonDetails) {
  std::string details(kPythonStaleDetails, sizeof kPythonStaleDetails - 1);
  // No sidecar-reason trailer: the reason must come from the details.
  auto s = DecodeStatus(10, "base revision 3 is stale", details, "");
  EXPECT_EQ(s.code, StatusCode::kAborted);
  EXPECT_EQ(s.reason, "STALE_REVISION");
  EXPECT_EQ(s.reason_code(), sidecar::v1::ERROR_REASON_STALE_REVISION);
  EXPECT_EQ(s.message, "base revision 3 is stale");
  EXPECT_EQ(s.metadata.at("current_revision"), "4");
  EXPECT_EQ(s.ToString(), "ABORTED/STALE_REVISION: base revision 3 is stale");
}

TEST(StatusDecoding, TrailerReasonWinsAndDetailsStillGiveMetadata) {
  std::string details(kPythonStaleDetails, sizeof kPythonStaleDetails - 1);
  auto s = DecodeStatus(10, "stale", details, "SOMETHING_ELSE");
  EXPECT_EQ(s.reason, "SOMETHING_ELSE");
  EXPECT_EQ(s.metadata.at("current_revision"), "4");
}

TEST(StatusDecoding, IgnoresGarbageDetails) {
  auto s = DecodeStatus(13, "x", "\xff\xff\x01garbage", "");
  EXPECT_EQ(s.code, StatusCode::kInternal);
  EXPECT_TRUE(s.reason.empty());
  EXPECT_TRUE(s.metadata.empty());
}

TEST(StatusDecoding, InStreamErrorDetail) {
  sidecar::v1::ErrorDetail d;
  d.set_code(static_cast<int>(StatusCode::kAborted));
  d.set_reason("STALE_REVISION");
  d.set_message("stale");
  (*d.mutable_metadata())["current_revision"] = "9";
  auto s = game_sidecar::StatusFromDetail(d);
  EXPECT_EQ(s.code, StatusCode::kAborted);
  EXPECT_EQ(s.reason, "STALE_REVISION");
  EXPECT_EQ(s.metadata.at("current_revision"), "9");
  EXPECT_FALSE(s.ok());
}

// The client's codes are gRPC's numbers, so wire integers convert directly;
// anything outside the range is UNKNOWN rather than an invalid enum value.
TEST(StatusCodes, RetryableReasonsMatchTheOtherClients) {
  using game_sidecar::Status;
  using game_sidecar::StatusCode;
  for (const char* r : {"QUEUE_FULL", "PROVIDER_TIMEOUT", "PROVIDER_RATE_LIMITED", "PROVIDER_UNAVAILABLE", "STORAGE_FULL"})
    EXPECT_TRUE(Status::Local(StatusCode::kUnavailable, r, "").retryable()) << r;
  for (const char* r : {"", "STALE_REVISION", "SHUTTING_DOWN", "RUN_CANCELLED", "INVALID_DELTA", "INTERNAL", "PROVIDER_ERROR"})
    EXPECT_FALSE(Status::Local(StatusCode::kUnavailable, r, "").retryable()) << r;
  Status gone = Status::Local(StatusCode::kUnavailable, "SIDECAR_GONE", "");
  EXPECT_FALSE(gone.retryable());  // stays gone
  gone.sidecar_will_restart = true;
  EXPECT_TRUE(gone.retryable());   // once READY again
}

TEST(StatusCodes, MatchGrpcNumbersAndNames) {
  EXPECT_EQ(game_sidecar::StatusCodeFromInt(0), StatusCode::kOk);
  EXPECT_EQ(game_sidecar::StatusCodeFromInt(16), StatusCode::kUnauthenticated);
  EXPECT_EQ(game_sidecar::StatusCodeFromInt(17), StatusCode::kUnknown);
  EXPECT_EQ(game_sidecar::StatusCodeFromInt(-1), StatusCode::kUnknown);
  EXPECT_STREQ(game_sidecar::StatusCodeName(StatusCode::kFailedPrecondition), "FAILED_PRECONDITION");
  EXPECT_STREQ(game_sidecar::StatusCodeName(static_cast<StatusCode>(99)), "UNKNOWN_CODE");
}

// reason_code() knows every ErrorReason the protos define, MODEL_NOT_INSTALLED
// included, and maps a reason newer than this client to UNSPECIFIED.
TEST(StatusCodes, ReasonCodeCoversTheProtoEnum) {
  game_sidecar::Status s = game_sidecar::Status::Local(StatusCode::kFailedPrecondition, "MODEL_NOT_INSTALLED", "");
  EXPECT_EQ(s.reason_code(), sidecar::v1::ERROR_REASON_MODEL_NOT_INSTALLED);
  const auto* descriptor = sidecar::v1::ErrorReason_descriptor();
  ASSERT_GT(descriptor->value_count(), 28);
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const auto* value = descriptor->value(i);
    if (value->number() == 0) continue;
    s.reason = value->name().substr(std::string("ERROR_REASON_").size());
    EXPECT_EQ(s.reason_code(), value->number()) << s.reason;
  }
  s.reason = "A_REASON_FROM_THE_FUTURE";
  EXPECT_EQ(s.reason_code(), sidecar::v1::ERROR_REASON_UNSPECIFIED);
  s.reason.clear();
  EXPECT_EQ(s.reason_code(), sidecar::v1::ERROR_REASON_UNSPECIFIED);
}

// docs/protocol.md §1: the handshake is the first stdout line that is a JSON
// object with a "sidecar" key; other lines before it are skipped, up to a bound.
TEST(HandshakeScan, SkipsLogAndTextLinesUntilTheHandshake) {
  game_sidecar::HandshakeScan scan;
  using V = game_sidecar::HandshakeScan::Verdict;
  EXPECT_EQ(scan.Offer(R"({"ts": 1.0, "level": "info", "msg": "serving", "fields": {"a": 1}})"), V::kSkip);
  EXPECT_EQ(scan.Offer("plain text"), V::kSkip);
  EXPECT_EQ(scan.Offer("{not json"), V::kSkip);
  EXPECT_EQ(scan.Offer("[1, 2]"), V::kSkip);
  EXPECT_EQ(scan.skipped_lines(), 4u);
  EXPECT_EQ(scan.Describe(), "; 4 stdout lines were not a handshake, the last: [1, 2]");
  // Another tool's line is still "the handshake": ParseHandshake then refuses it precisely.
  EXPECT_EQ(scan.Offer(R"({"sidecar":"other-tool"})"), V::kHandshake);
  EXPECT_EQ(scan.Offer(std::string(R"({"sidecar":"game-sidecar","protocol":1})") + "\r"), V::kHandshake);
}

TEST(HandshakeScan, GivesUpPastTwoHundredLinesOr64KiB) {
  using V = game_sidecar::HandshakeScan::Verdict;
  game_sidecar::HandshakeScan by_lines;
  for (size_t i = 0; i < game_sidecar::kHandshakeSkipLines; ++i) ASSERT_EQ(by_lines.Offer("x"), V::kSkip) << i;
  EXPECT_EQ(by_lines.Offer("x"), V::kGiveUp);
  game_sidecar::HandshakeScan by_bytes;
  const std::string kilobyte(1023, 'y');  // 1024 bytes with its newline
  for (int i = 0; i < 64; ++i) ASSERT_EQ(by_bytes.Offer(kilobyte), V::kSkip) << i;
  EXPECT_EQ(by_bytes.Offer("z"), V::kGiveUp);
}

TEST(RunId, UniqueAcrossThreadsAndShapedAsTheSidecarExpects) {
  // One process-wide counter (src/run_id.cpp), no thread_local state: libgame_sidecar's
  // static TLS stays small enough to dlopen (issue 32 item 1, capi.dlopen_tls).
  constexpr int kThreads = 4, kEach = 5000;
  std::vector<std::vector<std::string>> made(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&made, t] {
      for (int i = 0; i < kEach; ++i) made[t].push_back(game_sidecar::internal::NewRunId());
    });
  for (auto& thread : threads) thread.join();
  std::set<std::string> unique;
  for (const auto& ids : made)
    for (const auto& id : ids) {
      ASSERT_EQ(id.size(), 20u) << id;
      ASSERT_EQ(id.rfind("run-", 0), 0u) << id;
      ASSERT_EQ(id.find_first_not_of("0123456789abcdef", 4), std::string::npos) << id;
      unique.insert(id);
    }
  EXPECT_EQ(unique.size(), static_cast<size_t>(kThreads * kEach));
}
