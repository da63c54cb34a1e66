package dev.troupe.engine.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ShortBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shared model definition ({@link TransformerLayout}, {@link RopeTables}, {@link Projection})
 * and reading tensors in their stored dtype.
 */
class ModelDefinitionTest {
  @TempDir Path tmp;

  @Test
  void layoutNamesShapesAndStepsPerArchitecture() {
    ModelConfig qwen2 = TinyModels.config(Arch.QWEN2), qwen3 = TinyModels.config(Arch.QWEN3);
    ModelConfig llama = TinyModels.config(Arch.LLAMA);
    TransformerLayout l2 = TransformerLayout.of(qwen2), l3 = TransformerLayout.of(qwen3);
    TransformerLayout ll = TransformerLayout.of(llama);
    assertTrue(l2.steps().contains(LayerStep.QKV_BIAS));
    assertFalse(l2.steps().contains(LayerStep.QK_NORM));
    assertTrue(l3.steps().contains(LayerStep.QK_NORM));
    assertFalse(ll.steps().contains(LayerStep.QKV_BIAS) || ll.steps().contains(LayerStep.QK_NORM));
    assertEquals(LayerStep.INPUT_NORM, ll.steps().get(0));
    assertEquals(LayerStep.DOWN_PROJ, ll.steps().get(ll.steps().size() - 1));

    TransformerLayout.LayerTensors t = l2.layer(1);
    assertEquals("model.layers.1.self_attn.k_proj.weight", t.weight(Projection.K));
    assertEquals("model.layers.1.self_attn.k_proj.bias", t.bias(Projection.K));
    assertNull(t.bias(Projection.O));
    assertNull(t.qNorm());
    assertEquals("model.layers.1.self_attn.q_norm.weight", l3.layer(1).qNorm());
    int kv = qwen2.numKvHeads() * qwen2.headDim();
    assertArrayEquals(new long[] {kv, qwen2.hiddenSize()}, l2.shape(t.weight(Projection.K)));
    assertArrayEquals(
        new long[] {qwen2.hiddenSize(), qwen2.intermediateSize()},
        l2.shape(t.weight(Projection.DOWN)));
    // tied: no lm_head tensor, the LM head reads the embedding
    assertEquals(TransformerLayout.EMBED, l3.lmHead());
    assertFalse(l3.tensors().containsKey(TransformerLayout.LM_HEAD));
    assertEquals(TransformerLayout.LM_HEAD, ll.lmHead());
    assertEquals(7 * llama.numLayers() + 1, ll.productWeights().size());
    assertThrows(IllegalArgumentException.class, () -> ll.shape("model.layers.9.mlp.up_proj"));
    assertEquals("up_proj", Projection.UP.shortName());
    assertEquals(Projection.GATE, Projection.byShortName("gate_proj"));
  }

  @Test
  void ropeTablesMatchTheirAnglesAndRotateHalf() {
    ModelConfig c = TinyModels.config(Arch.LLAMA3_SCALED);
    RopeTables rope = RopeTables.of(c);
    int half = c.headDim() / 2;
    assertEquals(half, rope.pairs());
    float[][] table = rope.table(40);
    float[] cos = new float[half], sin = new float[half];
    for (int p : new int[] {0, 1, 17, 39}) {
      rope.angles(p, cos, sin);
      for (int i = 0; i < half; i++) {
        assertEquals(cos[i], table[0][p * half + i]);
        assertEquals(sin[i], table[1][p * half + i]);
      }
    }
    // the lowest frequency is divided by the factor (wavelength > original context / low factor)
    double unscaled = Math.pow(c.ropeTheta(), -2.0 * (half - 1) / c.headDim());
    assertEquals(unscaled / c.ropeScaling().factor(), rope.inverseFrequencies()[half - 1], 1e-15);
    // a step's table: a position's cos, then its sin, the same values
    int d = c.headDim();
    float[] cs = new float[3 * d];
    rope.angles(5, cos, sin);
    rope.angles(5, cs, d);
    for (int i = 0; i < half; i++) {
      assertEquals(cos[i], cs[d + i]);
      assertEquals(sin[i], cs[d + half + i]);
    }
    float[] x = new float[d + 2];
    for (int i = 0; i < x.length; i++) x[i] = i + 1;
    RopeTables.rotate(x, 1, d, cs, d); // the head at x[1 .. d+1): pairs (x[1+i], x[1+half+i])
    assertEquals(2 * cos[0] - (2 + half) * sin[0], x[1], 1e-5);
    assertEquals((2 + half) * cos[0] + 2 * sin[0], x[1 + half], 1e-5);
    assertEquals(1f, x[0]);
    assertEquals(d + 2f, x[d + 1]);
  }

  @Test
  void readsTensorsInTheirStoredDtypeOrConverted() throws IOException {
    Random r = new Random(1);
    float[] v = new float[1000];
    for (int i = 0; i < v.length; i++) v[i] = (float) r.nextGaussian();
    v[3] = 1e-6f; // an F16 subnormal
    for (DType stored : DType.values()) {
      Path dir = Files.createDirectories(tmp.resolve(stored.name()));
      TinyModels.writeSafetensors(
          dir.resolve("model.safetensors"),
          Map.of("w", v),
          Map.of("w", new long[] {10, 100}),
          stored);
      byte[] file = Files.readAllBytes(dir.resolve("model.safetensors"));
      try (SafetensorsWeights w = SafetensorsWeights.open(dir)) {
        // as stored: exactly the file's bytes (the data ends the file)
        int bytes = v.length * stored.bytes();
        ByteBuffer raw = ByteBuffer.allocate(bytes);
        w.copyStored("w", 0, v.length, raw);
        assertEquals(bytes, raw.position());
        assertArrayEquals(
            java.util.Arrays.copyOfRange(file, file.length - bytes, file.length), raw.array());
        for (DType as : List.of(DType.BF16, DType.F16)) {
          short[] s = new short[v.length - 7];
          w.copyTo("w", 7, s.length, ShortBuffer.wrap(s), as);
          float[] f = w.floats("w");
          for (int i = 0; i < s.length; i++)
            // verbatim when stored so; rounded once from the stored value otherwise
            assertEquals(as.fromFloat(f[7 + i]), s[i], stored + " as " + as + " at " + i);
          if (as == stored) {
            ShortBuffer fileShorts =
                ByteBuffer.wrap(file, file.length - bytes, bytes)
                    .order(ByteOrder.LITTLE_ENDIAN)
                    .asShortBuffer();
            for (int i = 0; i < s.length; i++) assertEquals(fileShorts.get(7 + i), s[i]);
          }
        }
      }
    }
  }

  @Test
  void conversionsRoundToNearestEven() {
    assertEquals((short) 0x3F80, DType.floatToBf16(1.0f));
    // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even (1.0)
    assertEquals((short) 0x3F80, DType.floatToBf16(1f + 0x1p-8f));
    assertEquals((short) 0x3F81, DType.floatToBf16(1f + 0x1.8p-8f));
    assertEquals((short) 0x3C00, DType.floatToF16(1.0f));
    assertEquals((short) 0x7C00, DType.floatToF16(1e6f)); // overflow: infinity
    assertEquals((short) 0x0001, DType.floatToF16(0x1p-24f)); // smallest subnormal
    assertTrue(Float.isNaN(DType.bf16ToFloat(DType.floatToBf16(Float.NaN))));
    assertTrue(Float.isNaN(DType.f16ToFloat(DType.floatToF16(Float.NaN))));
    for (float f : new float[] {0.1f, -3.7f, 1234.5f, 6e-5f})
      assertEquals(f, DType.f16ToFloat(DType.floatToF16(f)), Math.abs(f) * 0x1p-11f + 0x1p-25f);
  }

  @Test
  void writerRoundTripsThroughTheReaderWithMetadata() throws IOException {
    Map<String, InMemoryWeights.Tensor> t = new LinkedHashMap<>();
    t.put("z", new InMemoryWeights.Tensor(new float[] {1.5f, -2f, 3.25f}, new long[] {3}));
    t.put("a", new InMemoryWeights.Tensor(new float[] {0.1f, 0.2f}, new long[] {1, 2}));
    InMemoryWeights src = new InMemoryWeights(t, "test");
    for (DType d : DType.values()) {
      Path f = tmp.resolve(d + ".safetensors");
      SafetensorsWriter.write(f, src, List.of("z", "a"), d, Map.of("step", "7"));
      assertFalse(Files.exists(tmp.resolve(d + ".safetensors.tmp")));
      try (SafetensorsWeights w = SafetensorsWeights.openFile(f)) {
        assertEquals("7", w.metadata().get("step"));
        assertEquals(d, w.info("a").dtype());
        assertTrue(w.info("a").hasShape(1, 2));
        float[] a = w.floats("a");
        float[] z = w.floats("z");
        assertEquals(d == DType.F32 ? 0.2f : d.toFloat(d.fromFloat(0.2f)), a[1]);
        assertArrayEquals(new float[] {1.5f, -2f, 3.25f}, z); // exact in every dtype
      }
    }
  }
}
