package dev.troupe.scheduler;

/**
 * What a step does to one request's sequences, decided by the engine (its samplers and stop rules)
 * and applied by {@link Scheduler#update}. A request's sequences are named by index: 0 is the
 * prompt's, 1.. the choices forked from it.
 */
public sealed interface SequenceUpdate {
  SequenceGroup group();

  /**
   * The group's prompt is prefilled: it splits into {@code into} sequences sharing the prompt's
   * blocks (1: none split off, as a beam search, whose beams fork on their own).
   */
  record Split(SequenceGroup group, int into) implements SequenceUpdate {
    public Split {
      if (into < 1) throw new IllegalArgumentException("into must be >= 1");
    }
  }

  /** Sequence {@code index} gets {@code token} (computed in a later step). */
  record Append(SequenceGroup group, int index, int token) implements SequenceUpdate {}

  /**
   * Sequence {@code index} has ended: its blocks are released; the request leaves with its last.
   */
  record Finish(SequenceGroup group, int index) implements SequenceUpdate {}
}
