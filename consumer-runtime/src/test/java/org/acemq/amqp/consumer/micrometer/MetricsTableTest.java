package org.acemq.amqp.consumer.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.acemq.amqp.consumer.ProjectFiles;
import org.junit.jupiter.api.Test;

/**
 * The metrics table users read lists exactly the meters of {@link AcemqMeter}, with their type, unit and tags. The table
 * is the "## Metrics" section of the README. On a mismatch the failure message carries the table as it should read.
 */
class MetricsTableTest {

    private static final Pattern ROW = Pattern.compile("^\\|\\s*`([a-z0-9.]+)`\\s*\\|([^|]*)\\|([^|]*)\\|([^|]*)\\|.*$");

    @Test
    void everyMeterIsInTheDocumentedTableAndEveryDocumentedMeterExists() throws IOException {
        Path root = ProjectFiles.root();
        String table = documentedTable(root);
        Map<String, String> documented = new LinkedHashMap<>();
        for (String line : table.split("\\R")) {
            Matcher m = ROW.matcher(line.trim());
            if (m.matches()) {
                String previous = documented.put(m.group(1), normalise(m.group(2), m.group(3), m.group(4)));
                assertThat(previous).as("meter %s listed twice", m.group(1)).isNull();
            }
        }
        Map<String, String> declared = new LinkedHashMap<>();
        for (AcemqMeter meter : AcemqMeter.values()) {
            declared.put(meter.meterName(), normalise(meter.type().docName(), unit(meter), tags(meter)));
        }
        assertThat(documented).as("metrics table (%s); it should read:%n%s", source(root), render())
                .containsExactlyInAnyOrderEntriesOf(declared);
    }

    @Test
    void namesAreLowerCaseDottedNounsUnderAcemq() {
        for (AcemqMeter meter : AcemqMeter.values()) {
            assertThat(meter.meterName()).matches("acemq(\\.[a-z]+)+");
            assertThat(meter.description()).isNotBlank().doesNotContain("|");
        }
        assertThat(List.of(AcemqMeter.values()).stream().map(AcemqMeter::meterName).distinct().count())
                .isEqualTo(AcemqMeter.values().length);
    }

    /** @return the table in the same Markdown shape the test reads */
    static String render() {
        StringBuilder b = new StringBuilder("| Meter | Type | Unit | Tags | Description |\n|---|---|---|---|---|\n");
        for (AcemqMeter m : AcemqMeter.values()) {
            b.append("| `").append(m.meterName()).append("` | ").append(m.type().docName()).append(" | ")
                    .append(unit(m)).append(" | ").append(tags(m)).append(" | ").append(m.description())
                    .append(" |\n");
        }
        return b.toString();
    }

    private static String unit(AcemqMeter m) {
        return m.baseUnit() == null ? "-" : m.baseUnit();
    }

    private static String tags(AcemqMeter m) {
        return m.tagKeys().isEmpty() ? "-"
                : m.tagKeys().stream().map(t -> "`" + t + "`").collect(Collectors.joining(", "));
    }

    private static String normalise(String type, String unit, String tags) {
        return type.trim() + " | " + unit.trim() + " | " + tags.replace("`", "").replaceAll("\\s+", "").trim();
    }

    private static String source(Path root) {
        return "README.md, section ## Metrics";
    }

    private static String documentedTable(Path root) throws IOException {
        String section = readmeMetricsSection(root);
        assertThat(section).as("README.md has no '## Metrics' section").isNotNull();
        return section;
    }

    /** @return the lines under "## Metrics" up to the next level-2 heading, or null if there is no such section */
    private static String readmeMetricsSection(Path root) throws IOException {
        Path readme = root.resolve("README.md");
        if (!Files.isRegularFile(readme)) {
            return null;
        }
        List<String> section = null;
        for (String line : Files.readAllLines(readme)) {
            if (line.startsWith("## ")) {
                if (section != null) {
                    break;
                }
                if (line.substring(3).trim().equalsIgnoreCase("Metrics")) {
                    section = new ArrayList<>();
                }
            } else if (section != null) {
                section.add(line);
            }
        }
        return section == null ? null : String.join("\n", section);
    }
}
