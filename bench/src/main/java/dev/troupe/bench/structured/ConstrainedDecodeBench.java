package dev.troupe.bench.structured;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.RandomWeights;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.serving.Engine;
import dev.troupe.engine.serving.Engines;
import dev.troupe.engine.structured.StructuredOutputSettings;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.engine.tokenizer.TokenizerFixtures;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Decode throughput at batch 8 with every choice under a JSON schema against the same batch
 * unconstrained, through the whole engine (input processor, core with the sampler's mask, output
 * processor). The two are run alternately (7 rounds each) so that machine load affects both alike;
 * the grammar is compiled before the first round (cache). Each at temperature 1 and greedy.
 *
 * <p>Models: the built-in demo model (tiny: the worst case for the mask's relative cost) and a
 * random "small" Llama (hidden 512, 8 layers) with Llama 3's tokenizer. Run: {@code java -cp ...
 * dev.troupe.bench.structured.ConstrainedDecodeBench [tokenizer-dir]} (default: the llama3 test
 * fixture, {@code TokenizerFixtures}).
 */
public final class ConstrainedDecodeBench {

  static final String SCHEMA =
      """
      {"type":"array","items":{"type":"object","properties":{
        "id":{"type":"integer","minimum":0,"maximum":100000},
        "name":{"type":"string","maxLength":12},
        "tags":{"type":"array","items":{"enum":["red","green","blue"]},"maxItems":3},
        "score":{"type":"number","minimum":0,"maximum":1}},
       "required":["id","name","tags","score"]}}
      """;

  private static final int BATCH = 8;
  private static final int MAX_TOKENS = 96;
  private static final int ROUNDS = 7;

  /**
   * Sampled (the sampler's {@code exp} runs over the finite logits only, so a masked row is cheaper
   * to sample) and greedy (an argmax either way: what is left is the mask's own cost).
   */
  private static final double[] TEMPERATURES = {1.0, 0.0};

  private ConstrainedDecodeBench() {}

  public static void main(String[] args) {
    Path llama3 = args.length > 0 ? Path.of(args[0]) : TokenizerFixtures.dir("llama3");
    EngineSettings settings =
        new EngineSettings(16, 512, 0, 16, 2048, 64, true, 0, true, List.of());
    System.out.printf(Locale.ROOT, "cores=%d%n", Runtime.getRuntime().availableProcessors());
    try (Engine demo = Engines.open(new ServedModel("demo", "demo", 1, "fcfs"), settings)) {
      for (double t : TEMPERATURES)
        compare("demo model (Qwen3 vocabulary, 151,936 logits)", demo, t);
    }
    ModelConfig small =
        new ModelConfig(
            "LlamaForCausalLM",
            128256,
            512,
            1536,
            8,
            8,
            4,
            64,
            8192,
            1e-5,
            500_000.0,
            null,
            false,
            false,
            false,
            128000,
            List.of(128001, 128009),
            0);
    try (ModelRunner runner =
            CpuModelRunner.load(
                small, new RandomWeights(small, 7L, 0.02, "bench"), DType.BF16, 512, 16);
        Engine engine =
            Engine.create(
                "small",
                runner,
                TokenizerBundle.load(llama3),
                settings,
                SchedulingPolicy.FCFS,
                null,
                SamplingDefaults.NONE,
                null,
                StructuredOutputSettings.defaults())) {
      for (double t : TEMPERATURES)
        compare("random small Llama (hidden 512, 8 layers, Llama 3 vocabulary)", engine, t);
    }
  }

  private static void compare(String label, Engine engine, double temperature) {
    StructuredOutputsParams constraint =
        StructuredOutputsParams.json(SCHEMA, "structured_outputs.json")
            .withJsonOptions(true, false, null);
    run(engine, constraint, 0, temperature); // compiles the grammar (cached) and warms up
    run(engine, null, 0, temperature);
    double[][] free = new double[2][ROUNDS];
    double[][] constrained = new double[2][ROUNDS];
    for (int round = 0; round < ROUNDS; round++) {
      double[] f = run(engine, null, round + 1, temperature);
      double[] c = run(engine, constraint, round + 1, temperature);
      for (int k = 0; k < 2; k++) {
        free[k][round] = f[k];
        constrained[k][round] = c[k];
      }
    }
    for (int k = 0; k < 2; k++) {
      Arrays.sort(free[k]);
      Arrays.sort(constrained[k]);
    }
    System.out.printf(
        Locale.ROOT,
        "%s, temperature %.0f, batch %d (median of %d):%n"
            + "  steps with all %d choices running: unconstrained %.1f tok/s, JSON schema %.1f"
            + " tok/s: %.1f%% slower%n"
            + "  whole batch to the end: unconstrained %.1f tok/s, JSON schema %.1f tok/s%n",
        label,
        temperature,
        BATCH,
        ROUNDS,
        BATCH,
        free[0][ROUNDS / 2],
        constrained[0][ROUNDS / 2],
        100 * (1 - constrained[0][ROUNDS / 2] / free[0][ROUNDS / 2]),
        free[1][ROUNDS / 2],
        constrained[1][ROUNDS / 2]);
  }

  /**
   * One batch of {@link #BATCH} requests to the end. Returns generated tokens per second over the
   * steps where every choice ran (constrained choices may end early: the grammar completes, and a
   * smaller batch is cheaper per step but slower per token), and over the whole run.
   */
  private static double[] run(
      Engine engine, StructuredOutputsParams constraint, int round, double temperature) {
    long t0 = System.nanoTime();
    for (int i = 0; i < BATCH; i++) {
      SamplingParams p =
          SamplingParams.builder()
              .temperature(temperature)
              .seed(1000L * round + i)
              .maxTokens(MAX_TOKENS)
              .ignoreEos(constraint == null)
              .structuredOutputs(constraint)
              .build();
      GenerationRequest r =
          GenerationRequest.prompt(
              "r" + round + "-" + i + (constraint == null ? "f" : "c"), "Items:", p);
      EngineRequest prepared = engine.inputs().process(r);
      engine.add(prepared.withAdapter(0, null, 0));
    }
    long tokens = 0;
    long fullTokens = 0;
    long fullNanos = 0;
    while (engine.hasWork()) {
      long s0 = System.nanoTime();
      List<RequestUpdate> updates = engine.step().updates();
      long spent = System.nanoTime() - s0;
      int stepTokens = 0;
      for (RequestUpdate u : updates)
        for (RequestUpdate.ChoiceUpdate c : u.choices())
          stepTokens += c.tokenIds() == null ? 0 : c.tokenIds().length;
      tokens += stepTokens;
      if (stepTokens == BATCH) {
        fullTokens += stepTokens;
        fullNanos += spent;
      }
    }
    double wall = (System.nanoTime() - t0) / 1e9;
    return new double[] {fullNanos == 0 ? 0 : fullTokens / (fullNanos / 1e9), tokens / wall};
  }
}
