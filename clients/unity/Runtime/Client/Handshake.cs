#nullable enable
// The one JSON line the sidecar prints on stdout once it serves (docs/protocol.md §1):
// {"sidecar":"game-sidecar","protocol":1,"transport":"unix"|"tcp","address":"...",
//  "token":"...","pid":N,"version":"x.y.z"}
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace GameSidecar.Client
{
    /// <summary>The sidecar's first stdout line, parsed: where it listens and what it is (protocol.md §1).</summary>
    public sealed class Handshake
    {
        /// <summary>The protocol version this client speaks.</summary>
        public const int ProtocolVersion = 1;

        /// <summary>Before the handshake at most this many stdout lines, and bytes, are skipped
        /// (docs/protocol.md §1, "The handshake"): stderr merged into stdout puts log lines
        /// there first, and a program that is no sidecar must not keep the launcher reading.</summary>
        public const int SkipLines = 200;
        /// <summary>The bytes of stdout skipped at most before the handshake (see <see cref="SkipLines"/>).</summary>
        public const int SkipBytes = 64 * 1024;

        /// <summary>True for a JSON object with a "sidecar" key: the handshake line (Parse then
        /// says whether it is a good one). Any other line before it is skipped.</summary>
        public static bool IsHandshakeLine(string line)
        {
            if (!line.StartsWith("{", StringComparison.Ordinal)) return false;
            try
            {
                return FlatJson.ParseObject(line).ContainsKey("sidecar");
            }
            catch (FormatException)
            {
                return false;
            }
        }

        /// <summary>"unix" or "tcp".</summary>
        public string Transport { get; }
        /// <summary>Socket path for "unix"; "host:port" for "tcp".</summary>
        public string Address { get; }
        /// <summary>Present only when the sidecar generated the token itself.</summary>
        public string? Token { get; }
        /// <summary>The sidecar's process ID, as it reported it.</summary>
        public int Pid { get; }
        /// <summary>The sidecar's version ("0.4.0").</summary>
        public string Version { get; }
        /// <summary>The handshake protocol version (1).</summary>
        public int Protocol { get; }

        /// <summary>Builds a handshake from its fields (Parse reads one from the line).</summary>
        public Handshake(string transport, string address, string? token, int pid, string version, int protocol)
        {
            Transport = transport;
            Address = address;
            Token = token;
            Pid = pid;
            Version = version;
            Protocol = protocol;
        }

        /// <summary>True when the sidecar listens on a Unix socket (<see cref="Address"/> is its path).</summary>
        public bool IsUnix => Transport == "unix";

        /// <summary>The gRPC target: "unix:/path/sock" or "host:port" (as the Python and C++ clients print it).</summary>
        public string Target => IsUnix ? "unix:" + Address : Address;

        /// <summary>Parses and validates one handshake line; FormatException says what is wrong.</summary>
        public static Handshake Parse(string line)
        {
            Dictionary<string, object?> doc;
            try
            {
                doc = FlatJson.ParseObject(line);
            }
            catch (FormatException e)
            {
                throw new FormatException("not JSON: " + e.Message);
            }
            if (!(doc.TryGetValue("sidecar", out var who) && who as string == "game-sidecar"))
                throw new FormatException("not a game-sidecar handshake (no \"sidecar\":\"game-sidecar\")");
            var protocol = doc.TryGetValue("protocol", out var p) ? p as double? : null;
            if (protocol != ProtocolVersion)
                throw new FormatException($"unsupported protocol {Describe(p)} (this client speaks {ProtocolVersion})");
            var transport = doc.TryGetValue("transport", out var t) ? t as string : null;
            var address = doc.TryGetValue("address", out var a) ? a as string : null;
            if ((transport != "unix" && transport != "tcp") || string.IsNullOrEmpty(address))
                throw new FormatException("transport must be unix or tcp, with an address");
            var pid = doc.TryGetValue("pid", out var n) && n is double d ? (int)d : 0;
            var version = doc.TryGetValue("version", out var v) ? v as string ?? "" : "";
            var token = doc.TryGetValue("token", out var tok) ? tok as string : null;
            return new Handshake(transport!, address!, token, pid, version, ProtocolVersion);
        }

        private static string Describe(object? value) =>
            value is null ? "(missing)" : Convert.ToString(value, CultureInfo.InvariantCulture) ?? "";
    }

    /// <summary>
    /// Reads one JSON object whose values are strings, numbers, booleans or null;
    /// nested values are skipped. Enough for the handshake, and it spares a Unity
    /// game a System.Text.Json dependency.
    /// </summary>
    internal sealed class FlatJson
    {
        private readonly string _s;
        private int _i;

        private FlatJson(string s) { _s = s; }

        public static Dictionary<string, object?> ParseObject(string text)
        {
            var r = new FlatJson(text);
            var result = new Dictionary<string, object?>(StringComparer.Ordinal);
            r.Ws();
            r.Expect('{');
            r.Ws();
            if (r.Peek() == '}') { r._i++; r.End(); return result; }
            while (true)
            {
                r.Ws();
                var key = r.String();
                r.Ws();
                r.Expect(':');
                r.Ws();
                result[key] = r.Value();
                r.Ws();
                var c = r.Next();
                if (c == '}') break;
                if (c != ',') throw r.Error("expected ',' or '}'");
            }
            r.End();
            return result;
        }

        private void End()
        {
            Ws();
            if (_i != _s.Length) throw Error("text after the object");
        }

        private object? Value()
        {
            var c = Peek();
            if (c == '"') return String();
            if (c == '{' || c == '[') { Skip(); return null; }
            if (Word("true")) return true;
            if (Word("false")) return false;
            if (Word("null")) return null;
            var start = _i;
            while (_i < _s.Length && "+-0123456789.eE".IndexOf(_s[_i]) >= 0) _i++;
            if (start == _i || !double.TryParse(_s.Substring(start, _i - start), NumberStyles.Float,
                    CultureInfo.InvariantCulture, out var number))
                throw Error("expected a value");
            return number;
        }

        private void Skip()
        {
            var depth = 0;
            do
            {
                var c = Peek();
                if (c == '"') { String(); continue; }
                _i++;
                if (c == '{' || c == '[') depth++;
                else if (c == '}' || c == ']') depth--;
            } while (depth > 0);
        }

        private string String()
        {
            Expect('"');
            var sb = new StringBuilder();
            while (true)
            {
                var c = Next();
                if (c == '"') return sb.ToString();
                if (c != '\\') { sb.Append(c); continue; }
                var e = Next();
                switch (e)
                {
                    case 'n': sb.Append('\n'); break;
                    case 't': sb.Append('\t'); break;
                    case 'r': sb.Append('\r'); break;
                    case 'b': sb.Append('\b'); break;
                    case 'f': sb.Append('\f'); break;
                    case 'u':
                        if (_i + 4 > _s.Length) throw Error("short \\u escape");
                        sb.Append((char)int.Parse(_s.Substring(_i, 4), NumberStyles.HexNumber, CultureInfo.InvariantCulture));
                        _i += 4;
                        break;
                    default: sb.Append(e); break;
                }
            }
        }

        private bool Word(string w)
        {
            if (string.CompareOrdinal(_s, _i, w, 0, w.Length) != 0) return false;
            _i += w.Length;
            return true;
        }

        private void Ws()
        {
            while (_i < _s.Length && char.IsWhiteSpace(_s[_i])) _i++;
        }

        private char Peek() => _i < _s.Length ? _s[_i] : throw Error("unexpected end");

        private char Next() { var c = Peek(); _i++; return c; }

        private void Expect(char c)
        {
            if (Next() != c) throw Error($"expected '{c}'");
        }

        private FormatException Error(string what) => new FormatException($"{what} at offset {_i}");
    }
}
