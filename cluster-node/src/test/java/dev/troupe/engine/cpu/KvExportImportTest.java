package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.KvLayout;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Disaggregated prefill's seam: a prompt's blocks exported from one runner and imported into other
 * block ids of another runner give the next token exactly the logits the first runner gives it.
 */
class KvExportImportTest {
  static final int BS = 4, BLOCKS = 16;

  @ParameterizedTest
  @ValueSource(ints = {3, 8, 11}) // a partial block, exactly full blocks, several blocks
  void importedBlocksDecodeAsComputedOnes(int promptLength) {
    ModelConfig c = TinyModels.config(Arch.QWEN3);
    Map<String, float[]> w = TinyModels.randomWeights(c, 7);
    Random r = new Random(promptLength);
    int[] prompt = new int[promptLength];
    for (int i = 0; i < prompt.length; i++) prompt[i] = r.nextInt(c.vocabSize());
    int next = r.nextInt(c.vocabSize());
    int nb = (promptLength + 1 + BS - 1) / BS; // the prompt and the next token
    int[] tableP = new int[nb], tableD = new int[nb];
    for (int i = 0; i < nb; i++) {
      tableP[i] = 2 * i + 1; // scattered, and different ids on each side
      tableD[i] = BLOCKS - 1 - i;
    }
    try (CpuModelRunner p = CpuModelRunner.load(c, new MapWeights(c, w), BLOCKS, BS);
        CpuModelRunner d = CpuModelRunner.load(c, new MapWeights(c, w), BLOCKS, BS)) {
      assertNull(p.kvLayout().mismatch(d.kvLayout()));
      p.forward(java.util.List.of(new SequenceChunk(prompt, 0, tableP, false)));
      int[] promptBlocks = java.util.Arrays.copyOf(tableP, (promptLength + BS - 1) / BS);
      byte[] kv = p.exportBlocks(promptBlocks);
      assertEquals(promptBlocks.length * p.kvLayout().blockBytes(), kv.length);
      d.importBlocks(java.util.Arrays.copyOf(tableD, promptBlocks.length), kv);
      float[] expected =
          p.forward(
                  java.util.List.of(
                      new SequenceChunk(new int[] {next}, promptLength, tableP, false)))
              .get(0)[0];
      float[] got =
          d.forward(
                  java.util.List.of(
                      new SequenceChunk(new int[] {next}, promptLength, tableD, false)))
              .get(0)[0];
      assertArrayEquals(expected, got, "the imported cache decodes exactly as the computed one");
      assertThrows(
          IllegalArgumentException.class, () -> d.importBlocks(new int[] {0}, new byte[3]));
      assertThrows(IllegalArgumentException.class, () -> p.exportBlocks(new int[] {BLOCKS}));
    }
  }

  @org.junit.jupiter.api.Test
  void layoutsNameWhatDiffers() {
    KvLayout a = KvLayout.of("cpu", TinyModels.config(Arch.QWEN3), 4, "float32");
    assertNull(a.mismatch(a));
    KvLayout b = KvLayout.of("cpu", TinyModels.config(Arch.QWEN3), 8, "float32");
    String why = a.mismatch(b);
    assertNotNull(why);
    assertTrue(why.contains("block size 8 != 4"), why);
    assertTrue(
        a.mismatch(a.withModel("other")).contains("model"), "the model's identity is compared");
    assertTrue(
        a.mismatch(KvLayout.of("cuda", TinyModels.config(Arch.QWEN3), 4, "bfloat16"))
            .contains("dtype"));
  }
}
