package dev.troupe.engine.core;

import com.typesafe.config.Config;
import dev.troupe.scheduler.SchedulerConfig;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.List;

/**
 * How one engine (one model replica) is sized and what it allows, from {@code troupe.worker.engine}
 * (see cluster-node's {@code reference.conf}).
 *
 * @param blockSize positions per KV-cache block
 * @param numBlocks KV-cache blocks; the context is capped at numBlocks x blockSize
 * @param maxModelLen context length; 0 = the model's {@code max_position_embeddings}
 * @param maxNumSeqs most sequences running at once
 * @param maxNumBatchedTokens token budget of one step
 * @param maxWaiting bounded waiting queue; more requests are refused as overloaded
 * @param chunkedPrefill split long prompts over steps
 * @param agingSteps priority aging: one priority level per this many steps waited (0 = off)
 * @param allowRequestChatTemplate accept a {@code chat_template} sent with the request
 * @param logitsProcessors class names of custom logits processors requests may name
 * @param enablePrefixCaching reuse the KV blocks of cached prompt prefixes (vLLM's {@code
 *     --enable-prefix-caching}, on by default; {@code --no-enable-prefix-caching} turns it off)
 */
public record EngineSettings(
    int blockSize,
    int numBlocks,
    int maxModelLen,
    int maxNumSeqs,
    int maxNumBatchedTokens,
    int maxWaiting,
    boolean chunkedPrefill,
    int agingSteps,
    boolean allowRequestChatTemplate,
    List<String> logitsProcessors,
    boolean enablePrefixCaching) {

  public EngineSettings {
    if (blockSize < 1) throw new IllegalArgumentException("block-size must be >= 1");
    if (numBlocks < 1) throw new IllegalArgumentException("num-blocks must be >= 1");
    if (maxModelLen < 0) throw new IllegalArgumentException("max-model-len must be >= 0");
    logitsProcessors = List.copyOf(logitsProcessors);
  }

  /** With prefix caching on. */
  public EngineSettings(
      int blockSize,
      int numBlocks,
      int maxModelLen,
      int maxNumSeqs,
      int maxNumBatchedTokens,
      int maxWaiting,
      boolean chunkedPrefill,
      int agingSteps,
      boolean allowRequestChatTemplate,
      List<String> logitsProcessors) {
    this(
        blockSize,
        numBlocks,
        maxModelLen,
        maxNumSeqs,
        maxNumBatchedTokens,
        maxWaiting,
        chunkedPrefill,
        agingSteps,
        allowRequestChatTemplate,
        logitsProcessors,
        true);
  }

  /** Reads a {@code troupe.worker.engine} section. */
  public static EngineSettings fromConfig(Config c) {
    return new EngineSettings(
        c.getInt("block-size"),
        c.getInt("num-blocks"),
        c.getInt("max-model-len"),
        c.getInt("max-num-seqs"),
        c.getInt("max-num-batched-tokens"),
        c.getInt("max-waiting"),
        c.getBoolean("chunked-prefill"),
        c.getInt("aging-steps"),
        c.getBoolean("allow-request-chat-template"),
        c.getStringList("logits-processors"),
        c.getBoolean("enable-prefix-caching"));
  }

  /** Small sizes for tests: 16-position blocks, 64 of them, 8 sequences, 256-token steps. */
  public static EngineSettings small() {
    return new EngineSettings(16, 64, 0, 8, 256, 16, true, 100, true, List.of());
  }

  public EngineSettings withMaxWaiting(int n) {
    return new EngineSettings(
        blockSize,
        numBlocks,
        maxModelLen,
        maxNumSeqs,
        maxNumBatchedTokens,
        n,
        chunkedPrefill,
        agingSteps,
        allowRequestChatTemplate,
        logitsProcessors,
        enablePrefixCaching);
  }

  public EngineSettings withNumBlocks(int n) {
    return new EngineSettings(
        blockSize,
        n,
        maxModelLen,
        maxNumSeqs,
        maxNumBatchedTokens,
        maxWaiting,
        chunkedPrefill,
        agingSteps,
        allowRequestChatTemplate,
        logitsProcessors,
        enablePrefixCaching);
  }

  public EngineSettings withMaxNumSeqs(int n) {
    return new EngineSettings(
        blockSize,
        numBlocks,
        maxModelLen,
        n,
        maxNumBatchedTokens,
        maxWaiting,
        chunkedPrefill,
        agingSteps,
        allowRequestChatTemplate,
        logitsProcessors,
        enablePrefixCaching);
  }

  /**
   * The context length this replica serves: {@code max-model-len}, else the model's {@code
   * max_position_embeddings}, never more than the KV cache holds (a single sequence must always
   * fit, or it could never finish).
   */
  public int maxModelLen(dev.troupe.engine.ModelRunner runner) {
    int configured = maxModelLen > 0 ? maxModelLen : runner.config().maxPositionEmbeddings();
    return Math.min(configured, runner.numBlocks() * runner.blockSize());
  }

  public EngineSettings withPrefixCaching(boolean on) {
    return new EngineSettings(
        blockSize,
        numBlocks,
        maxModelLen,
        maxNumSeqs,
        maxNumBatchedTokens,
        maxWaiting,
        chunkedPrefill,
        agingSteps,
        allowRequestChatTemplate,
        logitsProcessors,
        on);
  }

  SchedulerConfig schedulerConfig(SchedulingPolicy policy) {
    return new SchedulerConfig(
        maxNumSeqs,
        maxNumBatchedTokens,
        maxWaiting,
        policy,
        chunkedPrefill,
        agingSteps,
        enablePrefixCaching);
  }
}
