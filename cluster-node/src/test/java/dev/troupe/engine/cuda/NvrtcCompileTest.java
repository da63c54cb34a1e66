package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every kernel compiles with NVRTC, the way the runner compiles them at load ({@link Nvrtc}: no
 * headers, cubin only), for Hopper (sm_90, the H100/H200) and Blackwell (sm_100), for every shape:
 * no stack frame, no spills, and each block's registers within a multiprocessor's. No GPU needed:
 * NVRTC 13.1 comes from org.bytedeco:cuda-redist (test scope) and loads through the bindings, whose
 * wrapper library needs some {@code libcuda.so.1}, here an empty one on {@code LD_LIBRARY_PATH} of
 * a forked JVM ({@link NativeStubs#emptyDriver}).
 */
class NvrtcCompileTest {
  @TempDir Path tmp;

  @Test
  void everyKernelCompilesForSm90AndSm100WithoutSpillsForEveryShape() throws Exception {
    StubDriverTest.assumeTools();
    List<String> archs = List.of("sm_90", "sm_100");
    ForkedJvm run =
        ForkedJvm.run(
            ForkedJvm.classpath(s -> false),
            Map.of("LD_LIBRARY_PATH", NativeStubs.emptyDriver().toString()),
            List.of(),
            tmp.resolve("child.log"),
            NvrtcCompileRun.class,
            tmp.toString(),
            archs.get(0),
            archs.get(1));
    assertEquals(0, run.exitCode(), run.output());
    assertTrue(run.output().startsWith("NVRTC 13."), run.output());
    for (Map.Entry<String, ModelConfig> e : KernelShapes.all().entrySet())
      for (String arch : archs) {
        String what = e.getKey() + " " + arch;
        byte[] cubin = Files.readAllBytes(tmp.resolve(e.getKey() + "-" + arch + ".cubin"));
        assertTrue(cubin.length > 4 && cubin[0] == 0x7f && cubin[1] == 'E', what + ": not ELF");
        // e_flags carry the SM version the cubin is for
        int flags =
            java.nio.ByteBuffer.wrap(cubin, 0x30, 4)
                .order(java.nio.ByteOrder.LITTLE_ENDIAN)
                .getInt();
        assertEquals(Integer.parseInt(arch.substring(3)), (flags >> 8) & 0xff, what + " e_flags");
        String log = Files.readString(tmp.resolve(e.getKey() + "-" + arch + ".log"));
        String report = KernelShapes.checkReport(what, e.getValue(), log);
        System.out.println("[NVRTC " + arch + " registers, " + e.getKey() + "]" + report);
      }
  }
}
