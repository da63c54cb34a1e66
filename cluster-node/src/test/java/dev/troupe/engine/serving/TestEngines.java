package dev.troupe.engine.serving;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Engines on the built-in demo model for tests. Demo runners are cached by cache shape (opening one
 * generates the weights, ~1-2 s) and handed out behind a wrapper whose {@code close} does nothing;
 * a runner must only be used by one engine at a time, so tests that run engines concurrently ask
 * for distinct shapes.
 */
public final class TestEngines {
  public static final TokenizerBundle TEXT = TokenizerBundle.demo();
  private static final Map<String, ModelRunner> RUNNERS = new ConcurrentHashMap<>();

  private TestEngines() {}

  /** A demo engine with these settings and a fresh runner wrapper (no weights regenerated). */
  public static Engine demo(EngineSettings settings, SchedulingPolicy policy) {
    return demo(settings, policy, SamplingDefaults.NONE);
  }

  /** A demo engine whose model has these generation-config sampling defaults. */
  public static Engine demo(
      EngineSettings settings, SchedulingPolicy policy, SamplingDefaults defaults) {
    return demo(runner(settings.numBlocks(), settings.blockSize()), settings, policy, defaults);
  }

  /** A demo-tokenizer engine over {@code runner} (e.g. a runner that fails on purpose). */
  public static Engine demo(
      ModelRunner runner,
      EngineSettings settings,
      SchedulingPolicy policy,
      SamplingDefaults defaults) {
    return Engine.create("demo", runner, TEXT, settings, policy, TEXT::compileTemplate, defaults);
  }

  /** A shared demo runner of this shape; closing it does nothing. */
  public static ModelRunner runner(int numBlocks, int blockSize) {
    ModelRunner shared =
        RUNNERS.computeIfAbsent(
            numBlocks + "x" + blockSize, k -> ModelRunners.openDemo(numBlocks, blockSize));
    return new Unclosed(shared);
  }

  /** Delegates everything but {@code close}. */
  public static class Unclosed implements ModelRunner {
    private final ModelRunner runner;

    public Unclosed(ModelRunner runner) {
      this.runner = runner;
    }

    public ModelConfig config() {
      return runner.config();
    }

    public int blockSize() {
      return runner.blockSize();
    }

    public int numBlocks() {
      return runner.numBlocks();
    }

    public List<float[][]> forward(List<SequenceChunk> batch) {
      return runner.forward(batch);
    }

    public void copyBlock(int src, int dst) {
      runner.copyBlock(src, dst);
    }

    public dev.troupe.engine.KvLayout kvLayout() {
      return runner.kvLayout();
    }

    public byte[] exportBlocks(int[] blocks) {
      return runner.exportBlocks(blocks);
    }

    public void importBlocks(int[] blocks, byte[] data) {
      runner.importBlocks(blocks, data);
    }

    public void registerAdapter(int id, dev.troupe.engine.LoraAdapter adapter) {
      runner.registerAdapter(id, adapter);
    }

    public void removeAdapter(int id) {
      runner.removeAdapter(id);
    }

    public void close() {}
  }
}
