package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.junit.jupiter.api.Test;

/**
 * The launch arguments as the driver reads them: {@code kernelParams[i]} points at argument i's
 * value (what cuLaunchKernel dereferences; StubDriverTest checks the whole call through the
 * bindings).
 */
class LaunchArgsTest {
  @Test
  void eachEntryPointsAtItsArgumentsValue() {
    try (LaunchArgs args = new LaunchArgs()) {
      PointerPointer<Pointer> p = args.pack("k", 0x1111L, -7, 2.5f, 0L, Long.MIN_VALUE);
      assertEquals(0x1111L, new LongPointer(p.get(0)).get());
      assertEquals(-7, new IntPointer(p.get(1)).get());
      assertEquals(2.5f, new FloatPointer(p.get(2)).get());
      assertEquals(0L, new LongPointer(p.get(3)).get());
      assertEquals(Long.MIN_VALUE, new LongPointer(p.get(4)).get());
      // a 4-byte value leaves no stale high bytes from a previous 8-byte one in its slot
      p = args.pack("k", 5, 0x7fL);
      assertEquals(5L, new LongPointer(p.get(0)).get());
      assertEquals(0x7fL, new LongPointer(p.get(1)).get());
      // the slots are 8 bytes apart and reused: the driver copies the values at launch
      assertEquals(8, p.get(1).address() - p.get(0).address());
      assertEquals(p.address(), args.pack("k", 1).address());
    }
  }

  @Test
  void unsupportedOrTooManyArgumentsAreRefused() {
    try (LaunchArgs args = new LaunchArgs()) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> args.pack("embed_rows", 1L, 2.0));
      assertTrue(
          e.getMessage().contains("embed_rows argument 1: unsupported type Double"),
          e.getMessage());
      assertThrows(IllegalArgumentException.class, () -> args.pack("k", 1L, null));
      assertThrows(
          IllegalArgumentException.class, () -> args.pack("k", new Object[LaunchArgs.MAX + 1]));
    }
  }
}
