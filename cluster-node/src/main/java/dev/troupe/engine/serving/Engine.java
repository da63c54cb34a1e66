package dev.troupe.engine.serving;

import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.core.EngineCore;
import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.core.StepOutput.Failure;
import dev.troupe.engine.input.InputProcessor;
import dev.troupe.engine.output.OutputProcessor;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.reasoning.ReasoningParser;
import dev.troupe.engine.sampling.EosTokens;
import dev.troupe.engine.sampling.LogitsProcessorRegistry;
import dev.troupe.engine.sampling.SamplerFactory;
import dev.troupe.engine.structured.Constraints;
import dev.troupe.engine.structured.GrammarCache;
import dev.troupe.engine.structured.GrammarHelpers;
import dev.troupe.engine.structured.StructuredOutputCompiler;
import dev.troupe.engine.structured.StructuredOutputSettings;
import dev.troupe.engine.structured.TokenVocabularies;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.List;
import java.util.function.Function;

/**
 * One model replica's engine, in vLLM v1's three parts: the {@link InputProcessor} (thread-safe:
 * the worker runs it on its input executor), the {@link EngineCore} and the {@link OutputProcessor}
 * (both on the worker's engine thread). This class wires the last two: {@link #add} queues a
 * prepared request in both, {@link #step} runs a core step and turns its outputs into {@link
 * RequestUpdate}s (finishing in the core the choices a stop string ended), {@link #abort} ends a
 * request with its last update.
 *
 * <p>Thread: everything but {@link #inputs()} is confined to the engine thread.
 */
public final class Engine implements AutoCloseable {
  private final String modelName;
  private final InputProcessor inputs;
  private final EngineCore core;
  private final OutputProcessor outputs;

  public Engine(String modelName, InputProcessor inputs, EngineCore core, OutputProcessor outputs) {
    this.modelName = modelName;
    this.inputs = inputs;
    this.core = core;
    this.outputs = outputs;
  }

  /**
   * An engine over {@code runner} with the model's tokenizer and chat template.
   *
   * @param templateCompiler compiles request-supplied chat templates (null: none accepted)
   * @param defaults the model's generation-config sampling defaults
   */
  public static Engine create(
      String modelName,
      ModelRunner runner,
      TokenizerBundle text,
      EngineSettings settings,
      SchedulingPolicy policy,
      Function<String, ChatTemplate> templateCompiler,
      SamplingDefaults defaults) {
    return create(
        modelName,
        runner,
        text,
        settings,
        policy,
        templateCompiler,
        defaults,
        null,
        StructuredOutputSettings.defaults());
  }

  /**
   * As above, with the model's reasoning parser ({@code --reasoning-parser}, or null) and the
   * structured-output bounds.
   */
  public static Engine create(
      String modelName,
      ModelRunner runner,
      TokenizerBundle text,
      EngineSettings settings,
      SchedulingPolicy policy,
      Function<String, ChatTemplate> templateCompiler,
      SamplingDefaults defaults,
      String reasoningParser,
      StructuredOutputSettings structured) {
    int eosId = text.eosTokenId() != null ? text.eosTokenId() : -1;
    List<Integer> configEos = runner.config().eosTokenIds();
    if (eosId < 0 && !configEos.isEmpty()) eosId = configEos.get(0);
    LogitsProcessorRegistry processors =
        settings.logitsProcessors().isEmpty()
            ? LogitsProcessorRegistry.none()
            : LogitsProcessorRegistry.allowing(settings.logitsProcessors());
    SamplerFactory samplers =
        new SamplerFactory(
            runner.config().vocabSize(),
            text.tokenizer(),
            EosTokens.of(eosId, configEos),
            processors);
    EngineCore core = new EngineCore(runner, settings, policy, samplers);
    ReasoningParser reasoning =
        reasoningParser == null ? null : ReasoningParser.named(reasoningParser, text.tokenizer());
    // grammars see the model's whole logits row; EOS and the config's EOS ids end a constrained
    // choice where the grammar may end
    List<Integer> stops = new java.util.ArrayList<>(configEos);
    if (eosId >= 0) stops.add(eosId);
    StructuredOutputCompiler compiler =
        new StructuredOutputCompiler(
            () -> TokenVocabularies.of(text.tokenizer(), runner.config().vocabSize(), stops),
            structured.limits(),
            new GrammarCache(structured.cacheEntries(), structured.cacheBytes()),
            structured.compileThreads() > 1 ? GrammarHelpers.executor() : null,
            structured.compileThreads(),
            structured.maxJsonWhitespace());
    InputProcessor inputs =
        new InputProcessor(
            modelName,
            text,
            templateCompiler,
            settings,
            policy,
            core.maxModelLen(),
            samplers,
            defaults,
            new Constraints(compiler, reasoning, structured.completeWithinMaxTokens()),
            reasoning);
    return new Engine(modelName, inputs, core, new OutputProcessor(text.tokenizer()));
  }

  public String modelName() {
    return modelName;
  }

  /** The input processor: thread-safe, for the worker's input executor. */
  public InputProcessor inputs() {
    return inputs;
  }

  /** The core: scheduler, runner, sampling (engine thread). */
  public EngineCore core() {
    return core;
  }

  /**
   * Queues a prepared request: null when queued, else why not (overloaded, id in flight). Engine
   * thread.
   */
  public Rejection add(EngineRequest request) {
    Rejection refused = core.add(request);
    if (refused != null) return refused;
    try {
      outputs.add(request);
    } catch (Rejection inconsistent) { // a resumed request the replicas disagree on
      core.abort(request.requestId());
      return inconsistent;
    }
    return null;
  }

  public boolean hasWork() {
    return core.hasWork();
  }

  public boolean isActive(String requestId) {
    return core.isActive(requestId) || outputs.has(requestId);
  }

  /**
   * What one step produced.
   *
   * @param updates one per request with news; a request's last carries its usage
   * @param failures requests failed on their own this step (they have left the engine)
   */
  public record Step(List<RequestUpdate> updates, List<Failure> failures) {}

  /** One core step, turned into text. */
  public Step step() {
    OutputProcessor.Result result = outputs.process(core.step());
    // vLLM v1: a stop string found by the output processor ends the choice in the core at once.
    for (OutputProcessor.StoppedChoice s : result.stopped())
      core.finishChoice(s.requestId(), s.index());
    for (Failure f : result.failures()) core.abort(f.requestId());
    return new Step(result.updates(), result.failures());
  }

  /**
   * Aborts a request: its blocks are freed now; its last update finishes every open choice with
   * {@code abort} (text held back for stop strings is flushed first). Null for unknown ids.
   */
  public RequestUpdate abort(String requestId) {
    core.abort(requestId);
    return outputs.abort(requestId);
  }

  @Override
  public void close() {
    core.close();
  }
}
