package dev.troupe.trajectory;

import dev.troupe.protocol.cluster.TrajectoryLogProtocol.StoredGroup;
import java.util.List;

/**
 * Durable storage of logged trajectory groups, keyed by (model, seq) with the split beside it.
 * Calls block; the {@link TrajectoryLog} entity calls them from its blocking dispatcher. Rows at or
 * past the log's committed sequence number are not visible: the journal decides what was logged.
 */
public interface TrajectoryStore extends AutoCloseable {

  /**
   * Writes the groups of {@code rows}, in order, at {@code firstSeq, firstSeq+1, …} in one
   * transaction, first removing rows at or after {@code firstSeq} left by a write whose event never
   * made it to the journal. Returns once the transaction is committed.
   */
  void write(String modelId, long firstSeq, List<Rows> rows);

  /**
   * Reads groups with {@code afterSeq < seq < committedEnd} in order, optionally of one split
   * (null: all), stopping after {@code limit} groups or once {@code maxBytes} is reached (at least
   * one group when any). One extra row is looked at to answer {@code hasMore}.
   */
  Page read(
      String modelId, String split, long afterSeq, long committedEnd, int limit, long maxBytes);

  /** Removes every group of a model; returns how many there were. */
  long deleteModel(String modelId);

  @Override
  void close();

  /** Groups of one append: their split and checkpoint step. */
  record Rows(String split, long step, List<byte[]> groups) {
    public Rows {
      groups = List.copyOf(groups);
    }
  }

  /** A page of groups and whether more follow. */
  record Page(List<StoredGroup> groups, boolean hasMore) {
    public Page {
      groups = List.copyOf(groups);
    }
  }
}
