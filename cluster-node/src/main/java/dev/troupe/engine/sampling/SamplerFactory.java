package dev.troupe.engine.sampling;

import dev.troupe.engine.Tokenizer;
import dev.troupe.protocol.cluster.SamplingParams;
import java.util.ArrayList;
import java.util.List;

/**
 * Makes the per-choice {@link Sampler}s of one model and owns the scratch buffers they share (one
 * vocabulary-sized row of processed logits plus index space), so a sampling step allocates next to
 * nothing.
 *
 * <p>Thread: {@link #prepare} and {@link #validate} are thread-safe (the input processor calls them
 * off the engine thread); {@link #create} and every sampler it made are confined to one thread (the
 * engine's): the shared scratch makes concurrent {@code next} calls unsafe.
 */
public final class SamplerFactory {

  private final int vocabSize;
  private final Tokenizer tokenizer;
  private final EosTokens eos;
  private final LogitsProcessorRegistry processors;
  final Workspace workspace;

  /**
   * @param vocabSize the model's logits row length (may exceed the tokenizer's vocabulary)
   * @param tokenizer for {@code bad_words}; may be null when no request uses them
   * @param eos the model's EOS ids (masked by {@code min_tokens})
   * @param processors the allow-list of custom logits processors
   */
  public SamplerFactory(
      int vocabSize, Tokenizer tokenizer, EosTokens eos, LogitsProcessorRegistry processors) {
    if (vocabSize <= 0) throw new IllegalArgumentException("vocabSize must be positive");
    this.vocabSize = vocabSize;
    this.tokenizer = tokenizer;
    this.eos = eos == null ? EosTokens.none() : eos;
    this.processors = processors == null ? LogitsProcessorRegistry.none() : processors;
    this.workspace = new Workspace(vocabSize);
  }

  /**
   * The sampler of choice {@code choiceIndex} (0-based) of a request.
   *
   * @throws InvalidSamplingParamsException when the parameters name ids outside the vocabulary, a
   *     bad word that tokenises outside it, or a logits processor that is not allowed
   */
  public Sampler create(SamplingParams params, int[] promptTokenIds, int choiceIndex) {
    return new Sampler(
        this,
        params,
        promptTokenIds,
        choiceIndex,
        BadWords.of(params.badWords(), tokenizer, vocabSize),
        processors.create(params.logitsProcessors(), params.engineXargs(), vocabSize, choiceIndex),
        null);
  }

  /**
   * The sampler of choice {@code choiceIndex} from a setup {@link #prepare} made: cheap, nothing of
   * the request's runs here.
   */
  public Sampler create(
      SamplingParams params, SamplingSetup setup, int[] promptTokenIds, int choiceIndex) {
    return new Sampler(
        this,
        params,
        promptTokenIds,
        choiceIndex,
        setup.badWords,
        setup.processors(choiceIndex),
        setup.constraint(choiceIndex));
  }

  /**
   * Everything {@link #create} would refuse, checked, and the request's costly parts made: {@code
   * bad_words} tokenized, the custom logits processors constructed for each of the {@code n}
   * choices (none for beam search, which ignores them, but they are still checked). Thread-safe.
   *
   * @throws InvalidSamplingParamsException as {@link #create}
   */
  public SamplingSetup prepare(SamplingParams params) {
    checkVocabulary(params, vocabSize);
    BadWords badWords = BadWords.of(params.badWords(), tokenizer, vocabSize);
    java.util.List<java.util.List<dev.troupe.engine.spi.LogitsProcessor>> perChoice =
        new java.util.ArrayList<>();
    if (params.useBeamSearch()) processors.check(params.logitsProcessors());
    else
      for (int i = 0; i < params.n(); i++)
        perChoice.add(
            processors.create(params.logitsProcessors(), params.engineXargs(), vocabSize, i));
    return new SamplingSetup(badWords, perChoice, java.util.List.of());
  }

  /** Runs every check {@link #create} runs, without constructing processors. */
  public void validate(SamplingParams params) {
    checkVocabulary(params, vocabSize);
    processors.check(params.logitsProcessors());
    BadWords.of(params.badWords(), tokenizer, vocabSize);
  }

  /**
   * The vocabulary-dependent checks (400s) of {@code logit_bias}, {@code allowed_token_ids} and
   * {@code stop_token_ids}: run by {@link #prepare}, {@link #validate} and every {@link Sampler}.
   */
  static void checkVocabulary(SamplingParams p, int vocab) {
    List<Integer> badBias = new ArrayList<>();
    for (int id : p.logitBias().keySet()) if (id < 0 || id >= vocab) badBias.add(id);
    if (!badBias.isEmpty()) {
      badBias.sort(null);
      throw new InvalidSamplingParamsException(
          "logit_bias",
          "token_id(s) "
              + badBias
              + " in logit_bias contain out-of-vocab token ids. Vocabulary size: "
              + vocab);
    }
    if (p.allowedTokenIds() != null) {
      for (int id : p.allowedTokenIds())
        if (id < 0 || id >= vocab)
          throw new InvalidSamplingParamsException(
              "allowed_token_ids", "allowed_token_ids contains out-of-vocab token id!");
    }
    for (int id : p.stopTokenIds())
      if (id < 0 || id >= vocab)
        throw new InvalidSamplingParamsException(
            "stop_token_ids",
            "stop_token_ids contain out-of-vocab token id " + id + ". Vocabulary size: " + vocab);
  }

  public int vocabSize() {
    return vocabSize;
  }

  public EosTokens eos() {
    return eos;
  }

  /** Scratch shared by the samplers of one factory (one thread). */
  static final class Workspace {
    final float[] work;
    final int[] idx;
    final long[] keys;
    final int[] bucket;
    final double[] binMass = new double[TopKTopP.BINS];

    Workspace(int vocabSize) {
      work = new float[vocabSize];
      idx = new int[vocabSize];
      keys = new long[vocabSize];
      bucket = new int[vocabSize];
    }
  }
}
