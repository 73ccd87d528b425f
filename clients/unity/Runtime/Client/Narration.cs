#nullable enable
// What the Narrate helpers yield: a TextDelta's text with its sentence end and the
// entities it names. The wire gives each mention's span in UTF-8 bytes (the proto's
// own encoding); a C# string counts UTF-16 code units, so a name after "Zoë" or an
// emoji would be off by one or more if the bytes were used as indices. The spans
// here are converted once, so text.Substring(Start, Length) is the name.
using System;
using System.Collections.Generic;
using GameSidecar.V1;

namespace GameSidecar.Client
{
    /// <summary>An entity named in a piece of narration, its span in the C# string's own units (UTF-16).</summary>
    public readonly struct Mention : IEquatable<Mention>
    {
        /// <summary>Builds a mention of <paramref name="entityId"/> at UTF-16 index <paramref name="start"/>.</summary>
        public Mention(string entityId, int start, int length)
        {
            EntityId = entityId;
            Start = start;
            Length = length;
        }

        /// <summary>The game's engine ID of the entity.</summary>
        public string EntityId { get; }
        /// <summary>Index of the name's first UTF-16 code unit in <see cref="NarrationPiece.Text"/>.</summary>
        public int Start { get; }
        /// <summary>The name's length in UTF-16 code units.</summary>
        public int Length { get; }

        /// <inheritdoc />
        public bool Equals(Mention other) => EntityId == other.EntityId && Start == other.Start && Length == other.Length;
        /// <inheritdoc />
        public override bool Equals(object? obj) => obj is Mention other && Equals(other);
        /// <inheritdoc />
        public override int GetHashCode() => HashCode.Combine(EntityId, Start, Length);
        /// <inheritdoc />
        public override string ToString() => $"{EntityId}@{Start}+{Length}";
    }

    /// <summary>One streamed piece of a narration (a TextDelta), with where a sentence ends and who it names.</summary>
    public sealed class NarrationPiece
    {
        private static readonly IReadOnlyList<Mention> NoMentions = Array.Empty<Mention>();

        /// <summary>Builds a piece (see <see cref="From"/> for one from the wire).</summary>
        public NarrationPiece(string text, bool sentenceEnd, IReadOnlyList<Mention>? mentions = null, int attempt = 0)
        {
            Text = text;
            SentenceEnd = sentenceEnd;
            Mentions = mentions ?? NoMentions;
            Attempt = attempt;
        }

        /// <summary>The text, naming entities by the display names the game set.</summary>
        public string Text { get; }
        /// <summary>True when <see cref="Text"/> ends a sentence (a UI may break the line, a TTS voice speak it).</summary>
        public bool SentenceEnd { get; }
        /// <summary>The entities <see cref="Text"/> names, in order; <c>Text.Substring(m.Start, m.Length)</c> is the name.</summary>
        public IReadOnlyList<Mention> Mentions { get; }
        /// <summary>The decision attempt this text belongs to (1-based; 0 outside decisions).</summary>
        public int Attempt { get; }

        /// <summary>The text, so pieces concatenate like the strings they carry.</summary>
        public override string ToString() => Text;

        /// <summary>A TextDelta with its mention spans converted from UTF-8 bytes to UTF-16 indices.</summary>
        public static NarrationPiece From(TextDelta delta)
        {
            var text = delta.Text;
            if (delta.Mentions.Count == 0) return new NarrationPiece(text, delta.SentenceEnd, null, delta.Attempt);
            var mentions = new List<Mention>(delta.Mentions.Count);
            foreach (var m in delta.Mentions)
            {
                var start = Utf16Index(text, m.Start);
                var end = Utf16Index(text, m.Start + m.Length);
                mentions.Add(new Mention(m.EntityId, start, end - start));
            }
            return new NarrationPiece(text, delta.SentenceEnd, mentions, delta.Attempt);
        }

        /// <summary>The UTF-16 index of UTF-8 byte offset <paramref name="byteOffset"/> in <paramref name="text"/>
        /// (clamped to the text; an offset inside a character moves to that character's end).</summary>
        public static int Utf16Index(string text, int byteOffset)
        {
            var bytes = 0;
            var i = 0;
            while (i < text.Length && bytes < byteOffset)
            {
                var c = text[i];
                if (c < 0x80) bytes += 1;
                else if (c < 0x800) bytes += 2;
                else if (char.IsHighSurrogate(c) && i + 1 < text.Length && char.IsLowSurrogate(text[i + 1]))
                {
                    // An astral character (an emoji, 𝔊): 4 bytes in UTF-8, 2 code units here.
                    bytes += 4;
                    i += 2;
                    continue;
                }
                else bytes += 3;
                i++;
            }
            return i;
        }
    }
}
