package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class PackerTest {
  static TokenizedHistory h(int[] tokens, boolean[] trainable) {
    double[] lp = new double[tokens.length];
    for (int i = 0; i < lp.length; i++) lp[i] = trainable[i] ? -i : Double.NaN;
    return new TokenizedHistory(tokens, trainable, lp);
  }

  @Test
  void packsGreedilyShiftsTargetsAndWeighsPerTrajectory() {
    TokenizedHistory a = h(new int[] {1, 2, 3, 4}, new boolean[] {false, false, true, true});
    TokenizedHistory b = h(new int[] {5, 6, 7}, new boolean[] {false, true, true});
    TokenizedHistory c =
        h(new int[] {8, 9, 10, 11, 12}, new boolean[] {false, false, false, true, true});
    List<PackedRow> rows =
        Packer.pack(
            List.of(
                new Packer.Item(a, 0, 0, 1.5),
                new Packer.Item(b, 0, 1, 1.5), // same trajectory, second history
                new Packer.Item(c, 1, 2, -2.0)),
            7);
    assertEquals(2, rows.size());
    PackedRow r0 = rows.get(0);
    assertArrayEquals(new int[] {1, 2, 3, 4, 5, 6, 7}, r0.tokens());
    assertArrayEquals(new int[] {0, 1, 2, 3, 0, 1, 2}, r0.positions());
    assertArrayEquals(new int[] {0, 0, 0, 0, 1, 1, 1}, r0.segments());
    // target t predicts token t+1 of the same segment; segment ends are never trainable
    assertArrayEquals(new boolean[] {false, true, true, false, true, true, false}, r0.mask());
    assertEquals(-2.0, r0.oldLogprobs()[1]);
    assertEquals(-3.0, r0.oldLogprobs()[2]);
    assertTrue(Double.isNaN(r0.oldLogprobs()[0]));
    // trajectory 0 has 4 trainable targets over its two histories
    assertEquals(1 / (4 + 1e-6), r0.weights()[5], 1e-12);
    assertArrayEquals(new int[] {0, 0, 0, 0, 1, 1, 1}, r0.historyIds());
    PackedRow r1 = rows.get(1);
    assertArrayEquals(new int[] {8, 9, 10, 11, 12}, r1.tokens());
    assertEquals(-2.0, r1.advantages()[2]);
    assertEquals(1 / (2 + 1e-6), r1.weights()[3], 1e-12);
  }

  @Test
  void truncatesHistoriesLongerThanARow() {
    TokenizedHistory a =
        h(new int[] {1, 2, 3, 4, 5}, new boolean[] {false, true, true, true, true});
    PackedRow r = Packer.pack(List.of(new Packer.Item(a, 0, 0, 1)), 3).get(0);
    assertArrayEquals(new int[] {1, 2, 3}, r.tokens());
    assertArrayEquals(new boolean[] {true, true, false}, r.mask());
    assertFalse(r.mask()[2]);
  }
}
