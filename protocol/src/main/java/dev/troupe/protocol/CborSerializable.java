package dev.troupe.protocol;

/**
 * Marker for every message, reply and event that crosses a node boundary or enters a journal. Bound
 * to {@code jackson-cbor} in {@code reference.conf}; name-based subtypes keep the wire format
 * independent of class renames.
 */
public interface CborSerializable {}
