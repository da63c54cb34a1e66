package dev.troupe.engine.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.runner.ModelRunners;
import java.nio.FloatBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

class DemoModelTest {

  @Test
  void demoIsATinyQwen3WithQwenVocabulary() {
    ModelConfig c = DemoModel.config();
    assertEquals("Qwen3ForCausalLM", c.architecture());
    assertEquals(151936, c.vocabSize());
    assertEquals(List.of(151645, 151643), c.eosTokenIds());
    assertTrue(c.tieWordEmbeddings() && c.qkNorm());
  }

  @Test
  void weightsAreDeterministicNormalAndRangeReadable() {
    WeightSource w = DemoModel.weights();
    String q = "model.layers.1.self_attn.q_proj.weight";
    float[] a = w.floats(q), b = DemoModel.weights().floats(q);
    assertArrayEquals(a, b);
    double sum = 0, sq = 0;
    for (float v : a) {
      sum += v;
      sq += v * v;
    }
    assertEquals(0.0, sum / a.length, 0.002);
    assertEquals(0.02, Math.sqrt(sq / a.length), 0.001);
    // a range read across an internal generation block equals the same part of a longer read
    String e = "model.embed_tokens.weight";
    float[] head = new float[70_000], part = new float[1000];
    w.copyTo(e, 0, head.length, FloatBuffer.wrap(head));
    w.copyTo(e, 65_000, part.length, FloatBuffer.wrap(part));
    assertArrayEquals(java.util.Arrays.copyOfRange(head, 65_000, 66_000), part);
    for (float v : w.floats("model.layers.0.self_attn.k_norm.weight")) assertEquals(1f, v);
  }

  @Test
  void demoRunnerProducesTheSameLogitsEveryTime() {
    float[] first;
    try (ModelRunner m = ModelRunners.openDemo(8, 16)) {
      first =
          m.forward(List.of(new SequenceChunk(new int[] {9707, 11, 1879}, 0, new int[] {0}, false)))
              .get(0)[0];
      assertEquals(151936, first.length);
    }
    try (ModelRunner m = ModelRunners.openDemo(8, 16)) {
      float[] again =
          m.forward(List.of(new SequenceChunk(new int[] {9707, 11, 1879}, 0, new int[] {3}, false)))
              .get(0)[0];
      assertArrayEquals(first, again);
    }
  }
}
