package dev.troupe.engine.input;

import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.core.TextParsing;
import dev.troupe.engine.reasoning.ReasoningParser;
import dev.troupe.engine.sampling.InvalidSamplingParamsException;
import dev.troupe.engine.sampling.SamplerFactory;
import dev.troupe.engine.sampling.SamplingSetup;
import dev.troupe.engine.structured.Constraints;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything a request needs before the engine core sees it, as vLLM v1's input processor: render
 * the chat template, bound the prompt, tokenize, truncate, and every check that needs the model
 * (context length against the prompt and {@code max_tokens}, vocabulary, priority against the
 * scheduling policy, {@code n} against {@code max-num-seqs}, the sampler's checks, custom logits
 * processors constructed, generation-config defaults applied once). Its product is an {@link
 * EngineRequest}, or a {@link Rejection} naming the field. It also serves {@code /tokenize} and
 * {@code /detokenize}.
 *
 * <p>Thread-safe, and meant to run off the engine's thread (the worker runs it on a bounded
 * executor), so a slow render or a huge prompt never stalls decoding. Whatever a request brings can
 * only fail that request: template and tokenizer errors, an exception in a request's logits
 * processor constructor, even a {@link StackOverflowError} or {@link OutOfMemoryError} raised while
 * working on its data, become its rejection.
 */
public final class InputProcessor {
  private static final Logger log = LoggerFactory.getLogger(InputProcessor.class);

  private final String modelName;
  private final Prompts prompts;
  private final SamplerFactory samplers;
  private final SamplingDefaults defaults;
  private final SchedulingPolicy policy;
  private final EngineSettings settings;
  private final int maxModelLen;
  private final Constraints constraints;
  private final ReasoningParser reasoning;

  /**
   * @param templateCompiler compiles request-supplied chat templates (null: none accepted)
   * @param maxModelLen the context length the core serves
   * @param samplers the model's sampler factory (its checks and preparation are thread-safe)
   * @param defaults the model's generation-config sampling defaults
   */
  public InputProcessor(
      String modelName,
      TokenizerBundle text,
      Function<String, ChatTemplate> templateCompiler,
      EngineSettings settings,
      SchedulingPolicy policy,
      int maxModelLen,
      SamplerFactory samplers,
      SamplingDefaults defaults) {
    this(
        modelName,
        text,
        templateCompiler,
        settings,
        policy,
        maxModelLen,
        samplers,
        defaults,
        null,
        null);
  }

  /**
   * @param constraints compiles structured-output constraints (null: a request with one is refused)
   * @param reasoning the model's reasoning parser, or null
   */
  public InputProcessor(
      String modelName,
      TokenizerBundle text,
      Function<String, ChatTemplate> templateCompiler,
      EngineSettings settings,
      SchedulingPolicy policy,
      int maxModelLen,
      SamplerFactory samplers,
      SamplingDefaults defaults,
      Constraints constraints,
      ReasoningParser reasoning) {
    this.constraints = constraints;
    this.reasoning = reasoning;
    this.modelName = modelName;
    this.settings = settings;
    this.policy = policy;
    this.maxModelLen = maxModelLen;
    this.samplers = samplers;
    this.defaults = defaults == null ? SamplingDefaults.NONE : defaults;
    this.prompts =
        new Prompts(
            text,
            templateCompiler,
            settings.allowRequestChatTemplate(),
            maxModelLen,
            samplers.vocabSize());
  }

  public int maxModelLen() {
    return maxModelLen;
  }

  /** The model's own sampling defaults (generation_config.json). */
  public SamplingDefaults samplingDefaults() {
    return defaults;
  }

  /**
   * Prepares a generation for the engine core.
   *
   * @throws Rejection whatever is wrong with the request (nothing else escapes)
   */
  public EngineRequest process(GenerationRequest r) {
    Stage stage = new Stage();
    try {
      return prepare(r, stage);
    } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
      throw rejection(e, stage, r.chatTemplate() != null);
    }
  }

  /**
   * What {@code e}, raised while preparing a request, means for it. An interrupted thread means the
   * worker cancelled the request (its client went away): whatever the interrupt made fail, the
   * request simply ends, with nothing logged.
   */
  private static Rejection rejection(Throwable e, Stage stage, boolean requestTemplate) {
    if (e instanceof CancellationException || Thread.currentThread().isInterrupted())
      return Rejection.cancelled();
    if (e instanceof Rejection x) return x;
    if (e instanceof SamplingParams.InvalidValue v)
      return Rejection.badRequest(v.getMessage(), v.param());
    if (e instanceof InvalidSamplingParamsException v)
      return Rejection.badRequest(v.getMessage(), v.param());
    return stage.failed(e, requestTemplate);
  }

  private EngineRequest prepare(GenerationRequest r, Stage stage) {
    if (policy == SchedulingPolicy.FCFS && r.priority() != 0)
      throw Rejection.badRequest(
          "Got priority "
              + r.priority()
              + " but model `"
              + modelName
              + "` does not use priority scheduling (its policy is "
              + policy.configName()
              + "); priority must be 0.",
          "priority");
    int maxNumSeqs = settings.maxNumSeqs();
    if (r.sampling().n() > maxNumSeqs)
      throw Rejection.badRequest(
          "n ("
              + r.sampling().n()
              + ") exceeds the maximum number of running sequences ("
              + maxNumSeqs
              + ")",
          "n");
    // The model's generation-config defaults, applied here and nowhere else.
    SamplingParams params = r.sampling().withDefaults(defaults);

    String param = r.prompt() != null ? "prompt" : "messages";
    int[] prompt;
    if (r.promptTokenIds() != null) {
      // The gateway rendered and tokenized it already (same template, same tokenizer).
      stage.at("checking the prompt", param);
      prompt =
          prompts.checkedIds(
              r.promptTokenIds().stream().mapToInt(Integer::intValue).toArray(),
              r.truncatePromptTokens(),
              param);
    } else {
      prompt = promptIds(r, stage, param);
    }
    params = capMaxTokens(params, prompt.length);
    if (!settings.chunkedPrefill() && prompt.length > settings.maxNumBatchedTokens())
      throw Rejection.badRequest(
          "prompt of "
              + prompt.length
              + " tokens exceeds the step budget ("
              + settings.maxNumBatchedTokens()
              + ") and chunked prefill is off",
          param);
    EngineRequest.Resumed resumed = null;
    if (r.resume() != null) {
      stage.at("checking the resumed output", null);
      resumed = Resumes.prepare(r.resume(), params, samplers.vocabSize());
      // The first replica delivered them with its first output.
      if (params.promptLogprobs() != null) params = params.toBuilder().promptLogprobs(null).build();
    }
    stage.at("preparing the sampling parameters", null);
    SamplingSetup setup = samplers.prepare(params);
    if (params.structuredOutputs() != null) {
      if (constraints == null)
        throw Rejection.badRequest(
            "Structured outputs are not available for this model.",
            params.structuredOutputs().param());
      stage.at("compiling the structured-output constraint", params.structuredOutputs().param());
      setup = setup.withConstraints(constraints.forRequest(params, prompt, r.chatTemplateKwargs()));
    }
    TextParsing parsing =
        new TextParsing(reasoning, r.chatTemplateKwargs(), r.toolCalling(), r.streamed());
    return new EngineRequest(
        r.requestId(),
        prompt,
        params,
        setup,
        r.priority(),
        r.cacheSalt(),
        0,
        null,
        0,
        r.returnTokenIds(),
        r.returnTokensAsTokenIds(),
        resumed,
        parsing.active() ? parsing : TextParsing.NONE);
  }

  private int[] promptIds(GenerationRequest r, Stage stage, String param) {
    stage.at("rendering the chat template", "chat_template");
    String text =
        r.prompt() != null
            ? r.prompt()
            : prompts.render(
                r.messages(),
                r.tools(),
                r.documents(),
                r.addGenerationPrompt(),
                r.continueFinalMessage(),
                r.chatTemplate(),
                r.chatTemplateKwargs(),
                r.reasoningEffort());
    stage.at("tokenizing the prompt", param);
    return prompts.promptIds(text, r.addSpecialTokens(), r.truncatePromptTokens(), param);
  }

  /**
   * No {@code max_tokens} means "up to the context", as vLLM's default; an explicit value must fit
   * beside the prompt (vLLM's 400), however large.
   */
  private SamplingParams capMaxTokens(SamplingParams p, int promptLength) {
    int room = maxModelLen - promptLength;
    if (p.maxTokens() == null) return p.withMaxTokens(room);
    if (p.maxTokens() > room)
      throw Rejection.badRequest(
          "'max_tokens' or 'max_completion_tokens' is too large: "
              + p.maxTokens()
              + ". This model's maximum context length is "
              + maxModelLen
              + " tokens and your request has "
              + promptLength
              + " input tokens ("
              + p.maxTokens()
              + " > "
              + maxModelLen
              + " - "
              + promptLength
              + ").",
          "max_tokens");
    return p;
  }

  // ------------------------------------------------------------------ tokenizer endpoints

  /**
   * A tokenized prompt ({@code /tokenize}).
   *
   * @param tokenStrs the ids' vocabulary strings when asked for, else null
   */
  public record Tokenized(int[] tokens, List<String> tokenStrs, int maxModelLen) {}

  /**
   * vLLM's {@code /tokenize}: a chat rendered with the template in force, or a plain prompt.
   *
   * @throws Rejection as {@link #process}
   */
  public Tokenized tokenize(
      List<Map<String, Object>> messages,
      String prompt,
      List<Map<String, Object>> tools,
      boolean addGenerationPrompt,
      boolean continueFinalMessage,
      boolean addSpecialTokens,
      String chatTemplate,
      Map<String, Object> chatTemplateKwargs,
      boolean returnTokenStrs) {
    Stage stage = new Stage();
    try {
      stage.at("rendering the chat template", "chat_template");
      String text =
          prompt != null
              ? prompt
              : prompts.render(
                  messages,
                  tools,
                  null,
                  addGenerationPrompt,
                  continueFinalMessage,
                  chatTemplate,
                  chatTemplateKwargs,
                  null);
      String param = prompt != null ? "prompt" : "messages";
      stage.at("tokenizing the prompt", param);
      prompts.checkLength(text, param);
      int[] ids = prompts.tokenizer().encode(text, addSpecialTokens);
      List<String> strs = null;
      if (returnTokenStrs) {
        strs = new ArrayList<>(ids.length);
        for (int id : ids) strs.add(prompts.tokenizer().idToToken(id));
      }
      return new Tokenized(ids, strs, maxModelLen);
    } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
      throw rejection(e, stage, chatTemplate != null);
    }
  }

  /**
   * vLLM's {@code /detokenize}.
   *
   * @throws Rejection for an id outside the tokenizer's vocabulary
   */
  public String detokenize(List<Integer> tokens) {
    return detokenize(tokens, true);
  }

  /**
   * As {@link #detokenize(List)}, keeping special tokens when {@code skipSpecialTokens} is false.
   *
   * @throws Rejection for an id outside the tokenizer's vocabulary
   */
  public String detokenize(List<Integer> tokens, boolean skipSpecialTokens) {
    int vocab = prompts.tokenizer().vocabSize();
    int[] ids = new int[tokens.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = tokens.get(i);
      if (ids[i] < 0 || ids[i] >= vocab)
        throw Rejection.badRequest("Token id " + ids[i] + " is out of vocabulary", "tokens");
    }
    return prompts.tokenizer().decode(ids, skipSpecialTokens, true);
  }

  /** Where the work on a request is, so that an unexpected failure names the right field. */
  private static final class Stage {
    private String doing = "checking the request";
    private String param;

    /**
     * Enters the next stage, unless the request was cancelled meanwhile (the worker interrupts the
     * thread of a request whose client went away).
     */
    void at(String doing, String param) {
      if (Thread.currentThread().isInterrupted())
        throw new CancellationException("cancelled before " + doing);
      this.doing = doing;
      this.param = param;
    }

    /**
     * A failure on this request's data: its 400 (the template or the prompt at fault), or a 500
     * when it is nothing the request could have caused.
     */
    Rejection failed(Throwable e, boolean requestTemplate) {
      if (e instanceof StackOverflowError)
        return Rejection.badRequest(
            "The request nests too deeply to be processed (stack overflow while " + doing + ").",
            param);
      if (e instanceof OutOfMemoryError)
        return Rejection.badRequest(
            "The request is too large to be processed (out of memory while " + doing + ").", param);
      if ("chat_template".equals(param))
        return Rejection.badRequest(
            "The chat template failed: " + e, requestTemplate ? "chat_template" : null);
      log.warn("preparing a request failed while {}", doing, e);
      return Rejection.internal("The worker failed while " + doing + ": " + e);
    }
  }
}
