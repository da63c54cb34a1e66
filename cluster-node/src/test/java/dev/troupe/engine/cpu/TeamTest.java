package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
}
