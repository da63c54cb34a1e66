package dev.troupe.engine.serving;

import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Forward steps of every shape serving will run — a prefill chunk, decode batches of 1 to 32 rows —
 * before a replica takes requests, as vLLM's engine runs a profiling pass and captures its batch
 * sizes at start. On the CPU runner this is the JIT's warm-up: its kernels are compiled after they
 * have run a while, and a replica that has not run a shape yet serves it at half speed or less
 * (measured over HTTP on the small bench model with ad hoc {@code curl} runs at load ~3: batch-1
 * decode 68-70 tok/s for its first ~10 s, then 130-160; the first burst of 8 streams at 142 tok/s,
 * later ones 390-430).
 *
 * <p>Bounded by {@code troupe.worker.compute.warmup} (default 5 s; 0 s turns it off): each round
 * runs every decode batch once and then a prefill chunk (256 tokens in the first round, 48 after),
 * rounds repeat up to {@link #ROUNDS} while time remains, so a large model whose single step
 * already compiles its kernels does one round and a small one does several. Uses the KV cache's
 * first blocks, which no sequence owns yet; whatever it writes there is overwritten before any
 * request reads it (a sequence writes each position's keys and values before attending to it, and
 * the prefix cache only hands out blocks computed for real requests).
 */
final class Warmup {
  private static final Logger log = LoggerFactory.getLogger(Warmup.class);

  /** Rounds at most, each every shape once. */
  static final int ROUNDS = 12;

  private static final int[] DECODE_BATCHES = {1, 2, 4, 8, 16, 32};

  /** Tokens of the chunk of later rounds (the kernel path, not GEMM). */
  private static final int SHORT_PREFILL = 48;

  private Warmup() {}

  /**
   * Runs the warm-up on {@code runner} for at most {@code budgetMillis} (and {@link #ROUNDS}
   * rounds); returns the number of forward steps it took.
   */
  static int run(
      ModelRunner runner, String name, int maxNumSeqs, int maxNumBatchedTokens, long budgetMillis) {
    if (budgetMillis <= 0) return 0;
    int bs = runner.blockSize(), blocks = runner.numBlocks();
    int vocab = runner.config().vocabSize();
    int prompt = Math.min(Math.min(256, maxNumBatchedTokens), bs * blocks);
    int maxBatch = Math.min(maxNumSeqs, blocks);
    long start = System.nanoTime(), deadline = start + budgetMillis * 1_000_000;
    SplittableRandom r = new SplittableRandom(0);
    int steps = 0;
    for (int round = 0; round < ROUNDS && System.nanoTime() < deadline; round++) {
      // decode batches first (the kernels the JIT must compile): one block per sequence
      for (int batch : DECODE_BATCHES) {
        if (batch > maxBatch || System.nanoTime() >= deadline) break;
        List<SequenceChunk> step = new ArrayList<>(batch);
        for (int b = 0; b < batch; b++)
          step.add(
              new SequenceChunk(new int[] {r.nextInt(vocab)}, r.nextInt(bs), new int[] {b}, false));
        runner.forward(step);
        steps++;
      }
      // then a chunk in a sequence of its own blocks: a long prompt once (the GEMM path: oneDNN
      // for a BF16 prompt where the CPU has it), then a short chunk every round, of generated
      // tokens (the kernels' path for a resumed request's replayed tokens, whatever the CPU)
      int n = round == 0 ? prompt : Math.min(prompt, SHORT_PREFILL);
      if (System.nanoTime() >= deadline) break;
      int[] table = new int[(n + bs - 1) / bs];
      for (int i = 0; i < table.length; i++) table[i] = i;
      int[] tokens = r.ints(n, 0, vocab).toArray();
      runner.forward(List.of(new SequenceChunk(tokens, 0, table, false, 0, round == 0 ? n : 0)));
      steps++;
    }
    log.info(
        "{}: warm-up ran {} forward steps in {} ms (budget {} ms)",
        name,
        steps,
        (System.nanoTime() - start) / 1_000_000,
        budgetMillis);
    return steps;
  }
}
