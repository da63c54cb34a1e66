package dev.troupe.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelInfo;
import dev.troupe.protocol.cluster.TrainableModelProtocol.Register;
import org.junit.jupiter.api.Test;

/**
 * Text bound for a journal is refused at the record (issue 21): a lone surrogate in a model's
 * project reached the registry's event, which CBOR could not write, and the registry stopped.
 */
class StorableTextTest {
  @Test
  void loneSurrogatesAreFoundAndPairsAreNot() {
    assertEquals(-1, StorableText.loneSurrogate("plain \uD83D\uDE00 emoji"));
    assertEquals(1, StorableText.loneSurrogate("a\uD800b"));
    assertEquals(0, StorableText.loneSurrogate("\uDC00"));
    assertEquals(2, StorableText.loneSurrogate("ab\uD800"));
  }

  @Test
  void journaledModelTextMustBeStorable() {
    for (int field = 0; field < 4; field++) {
      String[] v = {"e", "p", "n", "base"};
      v[field] = "x\uD800";
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> new Register("id", v[0], v[1], v[2], v[3], null));
      assertTrue(e.getMessage().contains("lone UTF-16 surrogate"), e.getMessage());
      assertThrows(
          IllegalArgumentException.class,
          () -> new ModelInfo("id", v[0], v[1], v[2], v[3], "run", 1L));
    }
    new Register("id", "e", "p", "n \uD83D\uDE00", "base", null);
  }
}
