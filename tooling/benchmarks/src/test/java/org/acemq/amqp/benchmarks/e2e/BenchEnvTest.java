package org.acemq.amqp.benchmarks.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class BenchEnvTest {

    private static final List<String> MOUNTS = List.of(
            "/dev/vda / ext4 rw,relatime 0 0",
            "tmpfs /tmp tmpfs rw,nosuid 0 0",
            "/dev/vdb /work/data xfs rw 0 0");

    @Test
    void fileSystemIsTheLongestMountPointThatHoldsThePath() {
        assertThat(BenchEnv.fileSystem(Path.of("/work/data/pg"), MOUNTS)).isEqualTo("xfs on /dev/vdb");
        assertThat(BenchEnv.fileSystem(Path.of("/work/other"), MOUNTS)).isEqualTo("ext4 on /dev/vda");
    }

    @Test
    void aMemoryFileSystemIsFlaggedBecauseFsyncCostsNothingThere() {
        assertThat(BenchEnv.fileSystem(Path.of("/tmp/journal"), MOUNTS))
                .isEqualTo("tmpfs on tmpfs: IN MEMORY, fsync costs nothing");
    }

    @Test
    @Timeout(30)
    void treeCpuCountsChildrenThatHaveAlreadyExited() throws Exception {
        long self = ProcessHandle.current().pid();
        long tree0 = BenchEnv.ownAndReapedCpuNanos(self);
        long own0 = BenchEnv.cpuNanos(ProcessHandle.current());
        // a child that burns CPU and exits; once reaped its time is the parent's cutime/cstime
        Process child = new ProcessBuilder("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
                .start();
        assertThat(child.waitFor(25, TimeUnit.SECONDS)).isTrue();
        // waitFor returns after the JVM's reaper has waited for the child, so its time is in our cutime/cstime now
        long childCpu = (BenchEnv.ownAndReapedCpuNanos(self) - tree0)
                - (BenchEnv.cpuNanos(ProcessHandle.current()) - own0);
        assertThat(childCpu).as("CPU of the exited child counted in the tree").isGreaterThanOrEqualTo(100_000_000L);
        long own = BenchEnv.ownAndReapedCpuNanos(self);
        assertThat(BenchEnv.treeCpuNanos(self)).isGreaterThanOrEqualTo(own);
    }
}
