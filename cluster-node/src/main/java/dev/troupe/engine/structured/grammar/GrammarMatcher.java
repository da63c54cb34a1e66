package dev.troupe.engine.structured.grammar;

import java.util.Arrays;

/**
 * Where one output stands in a {@link CompiledGrammar}: which tokens may come next ({@link
 * #fillNextTokenMask}), advancing by a sampled token ({@link #accept}), whether the output may end
 * ({@link #canTerminate}), and undo ({@link #rollback}) or branching ({@link #fork}) for beam
 * search and n &gt; 1. Stop tokens (EOS) are allowed exactly when the grammar can end; accepting
 * one terminates the matcher.
 *
 * <p>A mask is the union, over the distinct top states of the current stacks, of the tokens the
 * state accepts whatever the stack below holds (precomputed), plus the state's few uncertain tokens
 * that survive when run against the real stacks. Masks of recently seen configurations are cached.
 *
 * <p>Not thread-safe. Forks share one configuration store and must stay on one thread (the
 * engine's); they survive preemption untouched since they depend only on accepted tokens.
 */
public final class GrammarMatcher {

  /** State shared by a matcher and its forks: interned configurations and a small mask cache. */
  static final class Shared {
    final StackSets sets;
    private static final int CACHE = 4;
    private final int[] cachedSet = {-1, -1, -1, -1};
    private final long[][] cachedMask = new long[CACHE][];
    private int next;
    private long[] scratch = new long[0];
    // per configuration, the bytes left to complete after each allowed token (restrictToBudget)
    private final int[] afterSet = {-1, -1};
    private final int[][] after = new int[2][];
    private int nextAfter;

    Shared(StackSets sets) {
      this.sets = sets;
    }
  }

  private final CompiledGrammar grammar;
  private final Shared shared;
  private final StackSets sets;
  private int set;
  private boolean terminated;
  private int[] history = new int[16]; // configuration before each accepted token
  private int accepted;

  GrammarMatcher(CompiledGrammar grammar, Shared shared) {
    this.grammar = grammar;
    this.shared = shared;
    this.sets = shared.sets;
    this.set = sets.initial();
  }

  private GrammarMatcher(GrammarMatcher from) {
    this.grammar = from.grammar;
    this.shared = from.shared;
    this.sets = from.sets;
    this.set = from.set;
    this.terminated = from.terminated;
    this.history = from.history.clone();
    this.accepted = from.accepted;
  }

  /** A copy at the same position (shares the configuration store: same thread only). */
  public GrammarMatcher fork() {
    return new GrammarMatcher(this);
  }

  /**
   * Advances by one token; false (and no change) if the grammar does not allow it here. A stop
   * token is accepted only where the output may end, and terminates the matcher.
   */
  public boolean accept(int token) {
    if (terminated) return false;
    TokenVocabulary v = grammar.vocabulary();
    int next;
    if (v.isStop(token)) {
      if (!sets.canTerminate(set)) return false;
      next = set;
      terminated = true;
    } else {
      byte[] b = v.bytes(token);
      if (b == null) return false;
      next = sets.steps(set, b);
      if (next == StackSets.DEAD) return false;
    }
    if (accepted == history.length) history = Arrays.copyOf(history, accepted * 2);
    history[accepted++] = set;
    set = next;
    return true;
  }

  /** Undoes the last {@code tokens} accepted tokens. */
  public void rollback(int tokens) {
    if (tokens < 0 || tokens > accepted)
      throw new IllegalArgumentException(
          "cannot roll back " + tokens + " of " + accepted + " tokens");
    if (tokens == 0) return;
    accepted -= tokens;
    set = history[accepted];
    terminated = false;
  }

  /** Tokens accepted so far (stop token included). */
  public int acceptedTokens() {
    return accepted;
  }

  /** Whether the output may end here (a stop token is allowed). */
  public boolean canTerminate() {
    return !terminated && sets.canTerminate(set);
  }

  /** Whether a stop token was accepted. */
  public boolean isTerminated() {
    return terminated;
  }

  /** Whether nothing but a stop token may follow (the grammar is complete). */
  public boolean isComplete() {
    if (terminated) return true;
    if (!sets.canTerminate(set)) return false;
    long[] mask = new long[TokenVocabulary.words(grammar.vocabulary().size())];
    fillNextTokenMask(mask);
    for (int t : grammar.vocabulary().stops()) mask[t >>> 6] &= ~(1L << t);
    for (long w : mask) if (w != 0) return false;
    return true;
  }

  /**
   * Writes the allowed next tokens as a bitset (bit {@code id} of word {@code id / 64}) over the
   * model's logits row; {@code mask} needs at least {@code ceil(vocabulary size / 64)} words and is
   * overwritten. After termination only stop tokens are set.
   */
  public void fillNextTokenMask(long[] mask) {
    int words = TokenVocabulary.words(grammar.vocabulary().size());
    if (mask.length < words) throw new IllegalArgumentException("mask has too few words");
    if (terminated) {
      Arrays.fill(mask, 0);
      for (int t : grammar.vocabulary().stops()) mask[t >>> 6] |= 1L << t;
      return;
    }
    for (int i = 0; i < Shared.CACHE; i++) {
      if (shared.cachedSet[i] == set) {
        System.arraycopy(shared.cachedMask[i], 0, mask, 0, words);
        Arrays.fill(mask, words, mask.length, 0);
        return;
      }
    }
    compute(mask, words);
    int slot = shared.next;
    shared.next = (slot + 1) % Shared.CACHE;
    if (shared.cachedMask[slot] == null) shared.cachedMask[slot] = new long[words];
    System.arraycopy(mask, 0, shared.cachedMask[slot], 0, words);
    shared.cachedSet[slot] = set;
  }

  private void compute(long[] mask, int words) {
    Arrays.fill(mask, 0);
    TokenVocabulary v = grammar.vocabulary();
    TokenMaskTable t = grammar.masks();
    int[] tops = sets.tops(set);
    long[] universe = v.universe();
    for (int top : tops) t.orAccepted(top, mask, universe);
    for (int top : tops) {
      for (int u : t.uncertain(top)) {
        if ((mask[u >>> 6] & (1L << u)) != 0) continue;
        if (sets.steps(set, v.bytes(u)) != StackSets.DEAD) mask[u >>> 6] |= 1L << u;
      }
    }
    if (sets.canTerminate(set)) for (int s : v.stops()) mask[s >>> 6] |= 1L << s;
    assert words == universe.length;
  }

  /** The fewest bytes that complete the output from here (0: it may end now). */
  public int bytesToComplete() {
    return terminated ? 0 : sets.bytesToComplete(set);
  }

  /**
   * Keeps the output completable within a token budget: clears from {@code mask} (as {@link
   * #fillNextTokenMask} filled it) every token after which the rest of the output could no longer
   * fit, with its stop token, in {@code tokensLeft} tokens counting this one, reckoning one token
   * per byte still needed (byte-level vocabularies have a token for every byte). When no allowed
   * token keeps the output completable (the budget is already too small) the mask is left as it is.
   * Costs a walk of every allowed token: call it only near the end of a budget.
   *
   * @return whether a token was cleared
   */
  public boolean restrictToBudget(long[] mask, int tokensLeft) {
    if (terminated) return false;
    long limit = (long) tokensLeft - 2; // bytes that may remain after this token and the stop
    TokenVocabulary v = grammar.vocabulary();
    int words = TokenVocabulary.words(v.size());
    if (shared.scratch.length < words) shared.scratch = new long[words];
    long[] kept = shared.scratch;
    int[] left = bytesLeftAfter(mask, v);
    boolean any = false;
    boolean cleared = false;
    for (int w = 0; w < words; w++) {
      long m = mask[w];
      long keep = m;
      while (m != 0) {
        int id = (w << 6) + Long.numberOfTrailingZeros(m);
        m &= m - 1;
        if (left[id] > limit) keep &= ~(1L << (id & 63));
      }
      kept[w] = keep;
      any |= keep != 0;
      cleared |= keep != mask[w];
    }
    if (!any || !cleared) return false;
    System.arraycopy(kept, 0, mask, 0, words);
    return true;
  }

  /**
   * Per token of {@code mask} (this configuration's), the bytes left to complete the output after
   * it (a stop token: 0, it ends the output); cached for the last two configurations, since near
   * the end of a budget an output often stays in one (a long string) while the budget shrinks.
   */
  private int[] bytesLeftAfter(long[] mask, TokenVocabulary v) {
    for (int i = 0; i < shared.afterSet.length; i++)
      if (shared.afterSet[i] == set) return shared.after[i];
    int slot = shared.nextAfter;
    shared.nextAfter = (slot + 1) % shared.afterSet.length;
    int[] left = shared.after[slot];
    if (left == null) left = shared.after[slot] = new int[v.size()];
    for (int w = 0; w < TokenVocabulary.words(v.size()); w++) {
      long m = mask[w];
      while (m != 0) {
        int id = (w << 6) + Long.numberOfTrailingZeros(m);
        m &= m - 1;
        if (v.isStop(id)) {
          left[id] = 0; // only allowed where the output may end
          continue;
        }
        byte[] b = v.bytes(id);
        int after = b == null ? StackSets.DEAD : sets.steps(set, b);
        left[id] = sets.bytesToComplete(after);
      }
    }
    shared.afterSet[slot] = set;
    return left;
  }

  /** Whether {@code token} is allowed next (computes a mask; for tests and diagnostics). */
  public boolean isAllowed(int token) {
    long[] mask = new long[TokenVocabulary.words(grammar.vocabulary().size())];
    fillNextTokenMask(mask);
    return token >= 0
        && token < grammar.vocabulary().size()
        && (mask[token >>> 6] & (1L << token)) != 0;
  }

  public CompiledGrammar grammar() {
    return grammar;
  }
}
