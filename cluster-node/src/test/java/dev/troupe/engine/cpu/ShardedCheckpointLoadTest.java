package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.testing.TinyModels;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Hugging Face BF16 checkpoint laid out as released models are (sharded safetensors plus {@code
 * model.safetensors.index.json}, {@code torch_dtype: bfloat16}) loads at its own size: the weights
 * stay BF16 on the heap, nothing is held twice.
 */
class ShardedCheckpointLoadTest {
  @TempDir Path tmp;

  @Test
  void bf16ShardedCheckpointLoadsAtItsOwnSize() throws Exception {
    ModelConfig c = TinyModels.llama(32000, 256, 4, 4, 2, 768);
    Path dir =
        TinyModels.write(
            tmp.resolve("m"), c, TinyModels.randomWeights(c, 3), DType.BF16, /* sharded */ true);
    assertTrue(Files.isRegularFile(dir.resolve("model.safetensors.index.json")));
    long fileBytes;
    try (Stream<Path> s = Files.list(dir)) {
      fileBytes =
          s.filter(p -> p.toString().endsWith(".safetensors"))
              .mapToLong(p -> p.toFile().length())
              .sum();
    }
    long matrixTensorBytes = 0;
    Set<String> shards = new HashSet<>();
    try (WeightSource w = SafetensorsWeights.open(dir)) {
      for (String name : w.names()) {
        WeightSource.TensorInfo t = w.info(name);
        assertEquals(DType.BF16, t.dtype(), name);
        shards.add(t.origin());
        if (t.shape().size() == 2) matrixTensorBytes += t.numel() * 2;
      }
    }
    assertTrue(shards.size() >= 2, "tensors spread over shards: " + shards);
    int numBlocks = 8, blockSize = 16;
    long kvBytes = 2L * c.numLayers() * numBlocks * blockSize * c.numKvHeads() * c.headDim() * 4;
    long before = usedHeap();
    try (ModelRunner m = ModelRunners.open(dir, "auto", numBlocks, blockSize)) {
      long after = usedHeap();
      CpuModelRunner cpu = (CpuModelRunner) m;
      assertEquals(DType.BF16, cpu.dtype());
      // the matrices held are exactly the files' matrix tensors, byte for byte (no FP32 copy)
      assertEquals(matrixTensorBytes, cpu.weightBytes(), "matrix bytes held vs in the files");
      long grown = after - before;
      assertTrue(
          grown < fileBytes * 1.1 + kvBytes,
          "heap grew by "
              + (grown >> 20)
              + " MB for a "
              + (fileBytes >> 20)
              + " MB checkpoint and a "
              + (kvBytes >> 20)
              + " MB KV cache");
      // and it runs
      float[] logits =
          m.forward(
                  List.of(
                      new ModelRunner.SequenceChunk(new int[] {1, 2, 3}, 0, new int[] {0}, false)))
              .get(0)[0];
      assertEquals(c.vocabSize(), logits.length);
    }
  }

  private static long usedHeap() throws InterruptedException {
    Runtime rt = Runtime.getRuntime();
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(20);
    }
    return rt.totalMemory() - rt.freeMemory();
  }
}
