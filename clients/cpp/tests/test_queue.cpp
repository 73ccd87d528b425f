// Unit tests: the game-thread hand-off queue.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "game_sidecar/run.h"

using game_sidecar::RunEventKind;
using game_sidecar::RunEventQueue;
using game_sidecar::RunUpdate;

static RunUpdate Text(const std::string& run, uint64_t seq) {
  RunUpdate u;
  u.kind = RunEventKind::kText;
  u.run_id = run;
  u.seq = seq;
  u.event.mutable_text()->set_text(std::to_string(seq));
  return u;
}

TEST(RunEventQueue, DrainKeepsOrderAndHonoursMax) {
  RunEventQueue q;
  auto sink = q.Sink();
  for (uint64_t i = 1; i <= 5; ++i) sink(Text("r", i));
  std::vector<uint64_t> seen;
  EXPECT_EQ(q.Drain([&](RunUpdate& u) { seen.push_back(u.seq); }, 2), 2u);
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.Drain([&](RunUpdate& u) { seen.push_back(u.seq); }), 3u);
  EXPECT_EQ(seen, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  RunUpdate none;
  EXPECT_FALSE(q.TryPop(&none));
}

TEST(RunEventQueue, ManyProducersOneConsumerLosesNothing) {
  RunEventQueue q;
  constexpr int kProducers = 4, kEach = 2000;
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&q, p] {
      for (int i = 1; i <= kEach; ++i) q.Push(Text("run" + std::to_string(p), static_cast<uint64_t>(i)));
    });
  std::vector<uint64_t> last(kProducers, 0);
  int total = 0;
  while (total < kProducers * kEach) {
    RunUpdate u;
    ASSERT_TRUE(q.WaitPop(&u, std::chrono::milliseconds(10000)));
    int p = u.run_id.back() - '0';
    EXPECT_EQ(u.seq, last[p] + 1);  // per-run order survives the hand-off
    last[p] = u.seq;
    ++total;
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(q.size(), 0u);
}
