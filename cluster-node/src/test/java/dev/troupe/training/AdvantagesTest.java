package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

class AdvantagesTest {

  @Test
  void scaledGroupAdvantagesDivideByPopulationStdPlusEpsilon() {
    // rewards 1,0,0,1: mean 0.5, population std 0.5
    double[] a = Advantages.group(new double[] {1, 0, 0, 1}, true);
    double s = 0.5 / (0.5 + 1e-6);
    assertArrayEquals(new double[] {s, -s, -s, s}, a, 1e-12);
  }

  @Test
  void unscaledGroupAdvantagesAreRewardMinusMean() {
    assertArrayEquals(
        new double[] {-1, 0, 1}, Advantages.group(new double[] {1, 2, 3}, false), 1e-12);
    // rewards 1, 2, 6: mean 3, std sqrt((4 + 1 + 9) / 3)
    double std = Math.sqrt(14.0 / 3);
    assertArrayEquals(
        new double[] {-2 / (std + 1e-6), -1 / (std + 1e-6), 3 / (std + 1e-6)},
        Advantages.group(new double[] {1, 2, 6}, true),
        1e-12);
  }

  @Test
  void equalRewardsAndSingletonsGiveZeroAdvantage() {
    assertArrayEquals(new double[] {0, 0, 0}, Advantages.group(new double[] {0.7, 0.7, 0.7}, true));
    assertArrayEquals(new double[] {0}, Advantages.group(new double[] {5}, true));
  }

  private static PackedRow row(boolean[] mask, double[] adv, double[] w) {
    int n = mask.length;
    return new PackedRow(
        new int[n], new int[n], new int[n], mask, new double[n], adv, w, new int[n]);
  }

  @Test
  void normalizeRescalesWeightsToMeanOneAndAdvantagesByMeanAbsWeighted() {
    // two trajectories: one with 1 trainable token (w = 1), one with 3 (w = 1/3)
    PackedRow r1 = row(new boolean[] {true, false}, new double[] {2, 2}, new double[] {1.0, 1.0});
    PackedRow r2 =
        row(
            new boolean[] {true, true, true},
            new double[] {-1, -1, -1},
            new double[] {1 / 3.0, 1 / 3.0, 1 / 3.0});
    Advantages.normalize(List.of(r1, r2), 0.0);
    // weight mean over 4 trainable tokens = (1 + 1) / 4 = 0.5 -> weights 2 and 2/3
    assertEquals(2.0, r1.weights()[0], 1e-12);
    assertEquals(2 / 3.0, r2.weights()[1], 1e-12);
    // mean |A|·w = (2·2 + 3·(1·2/3)) / 4 = 1.5
    assertEquals(2 / 1.5, r1.advantages()[0], 1e-12);
    assertEquals(-1 / 1.5, r2.advantages()[2], 1e-12);
    // masked entries untouched
    assertEquals(2.0, r1.advantages()[1], 1e-12);
    assertEquals(1.0, r1.weights()[1], 1e-12);
  }

  @Test
  void advantageBalanceScalesOneSign() {
    PackedRow pos = row(new boolean[] {true, true}, new double[] {1, -1}, new double[] {1, 1});
    Advantages.normalize(List.of(pos), 0.5);
    // negatives × 0.5 -> (1, -0.5); mean |A| = 0.75
    assertEquals(1 / 0.75, pos.advantages()[0], 1e-12);
    assertEquals(-0.5 / 0.75, pos.advantages()[1], 1e-12);

    PackedRow neg = row(new boolean[] {true, true}, new double[] {1, -1}, new double[] {1, 1});
    Advantages.normalize(List.of(neg), -1.0);
    // b = -1 trains only on negatives: positives × 0 -> (0, -1); mean |A| over both = 0.5
    assertEquals(0.0, neg.advantages()[0], 1e-12);
    assertEquals(-2.0, neg.advantages()[1], 1e-12);
  }
}
