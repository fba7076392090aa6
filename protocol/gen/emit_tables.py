"""Whole generated files: the enum of API keys and the table of Kafka error codes."""

from ka_spec import GENERATED_NOTE, snake


def api_enum_name(name):
    """"CreateTopics" -> "KA_API_CREATE_TOPICS"."""
    return "KA_API_" + snake(name).upper()


def emit_api_keys(apis):
    """apis: [(api_key, name, ...)] sorted by key, as in the API table."""
    h = ["/*\n * ka_api_keys.h: every API key in the specs, by name.\n *\n * %s\n */"
         % GENERATED_NOTE.format(src="*Request.json specs")]
    h.append("#ifndef KA_API_KEYS_H\n#define KA_API_KEYS_H\n")
    h.append("/*\n * The APIs the specs give valid versions (the retired ZooKeeper-era ones are\n"
             " * left out). Their names and versions are in ka_api_table.h (ka_api_name()).\n */")
    h.append("enum ka_api_key {")
    for a in apis:
        h.append("%s = %d," % (api_enum_name(a[1]), a[0]))
    h.append("};\n")
    h.append("/* How many keys the enum names. */")
    h.append("#define KA_API_KEY_COUNT %d\n" % len(apis))
    h.append("#endif")
    return "\n".join(h) + "\n"


def error_enum_name(name):
    return "KA_KAFKA_ERR_" + name


def emit_error_codes(codes):
    """codes: [(code, NAME)] as read from the Errors class."""
    codes = sorted(codes)
    src = "Errors class"
    h = ["/*\n * ka_error_codes.h: every Kafka error code and its name.\n *\n"
         " * Only the codes and names are taken. These are the codes Kafka puts in\n"
         " * error_code fields, not kadmit's own negative ka_err returns (ka_error.h).\n"
         " *\n * %s\n */"
         % GENERATED_NOTE.format(src=src)]
    h.append("#ifndef KA_ERROR_CODES_H\n#define KA_ERROR_CODES_H\n\n#include <stddef.h>\n"
             "#include <stdint.h>\n")
    h.append("enum ka_kafka_error {")
    for code, name in codes:
        h.append("%s = %d," % (error_enum_name(name), code))
    h.append("};\n")
    h.append("struct ka_kafka_error_info {\nint16_t code;\nconst char *name; /* e.g. "
             "\"POLICY_VIOLATION\" */\n};\n")
    h.append("/* Every code, sorted. */")
    h.append("extern const struct ka_kafka_error_info ka_kafka_errors[];")
    h.append("extern const size_t ka_kafka_errors_count;\n")
    h.append("/* The code's name, or NULL for a code this Kafka version does not define. */")
    h.append("const char *ka_kafka_error_name(int16_t code);\n")
    h.append("#endif")
    c = ["/*\n * ka_error_codes.c: Kafka's error codes (see ka_error_codes.h).\n *\n * %s\n */"
         % GENERATED_NOTE.format(src=src)]
    c.append('#include "ka_error_codes.h"\n')
    c.append("const struct ka_kafka_error_info ka_kafka_errors[] = {")
    for code, name in codes:
        c.append('{%s, "%s"},' % (error_enum_name(name), name))
    c.append("};\n")
    c.append("const size_t ka_kafka_errors_count = sizeof(ka_kafka_errors) / "
             "sizeof(ka_kafka_errors[0]);\n")
    c.append("const char *ka_kafka_error_name(int16_t code)\n{")
    c.append("size_t lo = 0, hi = ka_kafka_errors_count;")
    c.append("while (lo < hi) {\nsize_t mid = lo + (hi - lo) / 2;")
    c.append("if (ka_kafka_errors[mid].code == code)\nreturn ka_kafka_errors[mid].name;")
    c.append("if (ka_kafka_errors[mid].code < code)\nlo = mid + 1;\nelse\nhi = mid;\n}")
    c.append("return NULL;\n}")
    return "\n".join(h) + "\n", "\n".join(c) + "\n"
