package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;

/**
 * {@link VecMath#exp}: accuracy against {@code Math.exp}, vector and scalar forms the same bits.
 */
class VecMathTest {
  private static final int LANES = FloatVector.SPECIES_PREFERRED.length();

  @Test
  void expIsWithinTwoUlpOfMathExpAndVectorEqualsScalar() {
    SplittableRandom r = new SplittableRandom(7);
    float[] x = new float[LANES], got = new float[LANES];
    double worst = 0;
    for (int n = 0; n < 200_000; n++) {
      for (int i = 0; i < LANES; i++)
        x[i] =
            n % 2 == 0
                ? (float) r.nextDouble(-87.3, 88.37) // the finite range
                : (float) r.nextDouble(-20, 1); // where softmax and SwiGLU live
      VecMath.exp(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, x, 0)).intoArray(got, 0);
      for (int i = 0; i < LANES; i++) {
        float want = (float) Math.exp(x[i]);
        assertEquals(
            Float.floatToRawIntBits(VecMath.exp(x[i])),
            Float.floatToRawIntBits(got[i]),
            "vector and scalar at " + x[i]);
        worst = Math.max(worst, Math.abs(got[i] - want) / Math.ulp(want));
      }
    }
    assertTrue(worst <= 2, "worst error " + worst + " ulp");
  }

  @Test
  void expEdges() {
    float[] x = {
      Float.NaN,
      Float.POSITIVE_INFINITY,
      Float.NEGATIVE_INFINITY,
      89f,
      88.3f,
      -87.3f,
      -88f,
      -1e30f,
      0f,
      -0f,
      1f,
      -1f
    };
    for (float v : x) {
      float s = VecMath.exp(v);
      float[] lane = new float[LANES];
      java.util.Arrays.fill(lane, v);
      VecMath.exp(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, lane, 0)).intoArray(lane, 0);
      assertEquals(Float.floatToRawIntBits(s), Float.floatToRawIntBits(lane[0]), "at " + v);
    }
    assertTrue(Float.isNaN(VecMath.exp(Float.NaN)));
    assertEquals(Float.POSITIVE_INFINITY, VecMath.exp(Float.POSITIVE_INFINITY));
    assertEquals(Float.POSITIVE_INFINITY, VecMath.exp(89f));
    assertEquals(0f, VecMath.exp(Float.NEGATIVE_INFINITY));
    assertEquals(0f, VecMath.exp(-88f));
    assertEquals(1f, VecMath.exp(0f));
    assertEquals(1f, VecMath.exp(-0f));
    assertEquals(
        (float) Math.exp(88.3f), VecMath.exp(88.3f), Math.ulp((float) Math.exp(88.3f)) * 2);
  }
}
