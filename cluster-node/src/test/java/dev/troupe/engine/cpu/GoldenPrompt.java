package dev.troupe.engine.cpu;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

/** The golden Llama prompt (test resources {@code golden/llama}) run in GEMM-sized steps. */
final class GoldenPrompt {
  private GoldenPrompt() {}

  /** golden.json: the prompt's tokens and PyTorch's FP32 logits. */
  static JsonNode read(Path dir) throws IOException {
    return new ObjectMapper().readTree(dir.resolve("golden.json").toFile());
  }

  static int[] tokens(JsonNode golden) {
    int[] tokens = new int[golden.get("tokens").size()];
    for (int i = 0; i < tokens.length; i++) tokens[i] = golden.get("tokens").get(i).asInt();
    return tokens;
  }

  /**
   * All logits of the prompt {@code tokens} computed in one step beside a companion prompt of n
   * tokens: prompt rows, so BF16 products take oneDNN where the runner has it; without it, with n ≥
   * 25 the 40-token prompt's step is over 64 rows, so its products take the GEMM path.
   */
  static float[][] withCompanion(ModelRunner m, int[] tokens, int n, long seed) {
    Random r = new Random(seed);
    int[] other = new int[n];
    for (int i = 0; i < n; i++) other[i] = 3 + r.nextInt(200);
    int[] table = {0, 1, 2, 3, 4, 5}, otherTable = {10, 11, 12, 13, 14, 15, 16};
    return m.forward(
            List.of(
                SequenceChunk.prompt(tokens, 0, table, true),
                SequenceChunk.prompt(other, 0, otherTable, false)))
        .get(0);
  }
}
