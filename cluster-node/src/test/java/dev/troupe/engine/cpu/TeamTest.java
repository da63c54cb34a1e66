package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;

/** The team's region, barriers, shares and failure handling. */
class TeamTest {
  private final Team team = Team.shared();

  @Test
  void everyMemberRunsAndBarriersOrderPhases() {
    int n = team.size();
    AtomicIntegerArray phase1 = new AtomicIntegerArray(n), seen = new AtomicIntegerArray(n);
    for (int round = 0; round < 200; round++) {
      for (int m = 0; m < n; m++) phase1.set(m, 0);
      team.run(
          m -> {
            phase1.set(m, 1);
            team.barrier();
            // after the barrier every member's phase 1 is visible
            int sum = 0;
            for (int k = 0; k < n; k++) sum += phase1.get(k);
            seen.set(m, sum);
          });
      for (int m = 0; m < n; m++) assertEquals(n, seen.get(m), "round " + m);
    }
  }

  @Test
  void aFailingMemberFailsTheRegionAndTheTeamStaysUsable() {
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () ->
                team.run(
                    m -> {
                      if (m == team.size() - 1) throw new IllegalStateException("member failed");
                      team.barrier();
                      team.barrier();
                    }));
    assertEquals("member failed", e.getMessage());
    AtomicIntegerArray ran = new AtomicIntegerArray(team.size());
    team.run(
        m -> {
          team.barrier();
          ran.set(m, 1);
        });
    for (int m = 0; m < team.size(); m++) assertEquals(1, ran.get(m));
  }

  @Test
  void sharesCoverTheRangeInAlignedBlocks() {
    for (int n : new int[] {0, 1, 5, 64, 130, 128256})
      for (int members = 1; members <= 4; members++) {
        int next = 0;
        for (int m = 0; m < members; m++) {
          int[] r = Team.share(n, members, m, 4);
          assertEquals(next, r[0]);
          assertTrue((r[0] % 4 == 0 || r[0] == n) && (r[1] % 4 == 0 || r[1] == n));
          next = r[1];
        }
        assertEquals(n, next);
      }
  }

  @Test
  void claimsHandEachPieceOutOnceAndTheOthersTakeOverASlowMembersRest() throws Exception {
    int members = 3, n = 300;
    Team.Claims claims = new Team.Claims(members);
    for (int round = 0; round < 20; round++) {
      claims.reset(2);
      AtomicIntegerArray owner = new AtomicIntegerArray(n);
      for (int i = 0; i < n; i++) owner.set(i, -1);
      List<List<Integer>> taken = new ArrayList<>();
      List<Thread> threads = new ArrayList<>();
      for (int m = 0; m < members; m++) {
        int me = m;
        List<Integer> mine = new ArrayList<>();
        taken.add(mine);
        threads.add(
            new Thread(
                () -> {
                  for (int p; (p = claims.claim(1, me, n)) >= 0; ) {
                    assertEquals(-1, owner.getAndSet(p, me), "piece " + p + " handed out twice");
                    mine.add(p);
                    if (me == 0) sleep(1); // the slow member
                  }
                }));
      }
      for (Thread t : threads) t.start();
      for (Thread t : threads) t.join();
      for (int i = 0; i < n; i++) assertTrue(owner.get(i) >= 0, "piece " + i + " never handed out");
      // member 0's share is [0, 100): it took its first pieces in order, the others its tail
      List<Integer> slow = taken.get(0);
      for (int i = 0; i < slow.size(); i++) assertEquals(i, slow.get(i));
      assertTrue(slow.size() < 100, "the others took over the slow member's rest: " + slow.size());
      assertTrue(owner.get(99) != 0);
      assertEquals(-1, claims.claim(0, 0, 0), "an empty counter has no pieces");
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
