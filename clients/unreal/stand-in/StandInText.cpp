// STAND-IN (see CoreMinimal.h): FString, its Printf, UTF-16 <-> UTF-8, FBase64.
#include "StandInInternal.h"

using namespace StandInText;

// ---- FString ----

bool FString::Equals(const FString& o, ESearchCase::Type c) const {
  return s_.size() == o.s_.size() && SameSpan(s_.data(), o.s_.data(), s_.size(), c);
}

bool FString::Contains(const TCHAR* sub, ESearchCase::Type c) const {
  const size_t n = Length(sub);
  if (n > s_.size()) return false;
  for (size_t i = 0; i + n <= s_.size(); ++i) if (SameSpan(s_.data() + i, sub, n, c)) return true;
  return false;
}

bool FString::StartsWith(const FString& prefix, ESearchCase::Type c) const {
  return prefix.s_.size() <= s_.size() && SameSpan(s_.data(), prefix.s_.data(), prefix.s_.size(), c);
}

bool FString::EndsWith(const FString& suffix, ESearchCase::Type c) const {
  return suffix.s_.size() <= s_.size() &&
         SameSpan(s_.data() + s_.size() - suffix.s_.size(), suffix.s_.data(), suffix.s_.size(), c);
}

FString FString::TrimStartAndEnd() const {
  size_t first = 0, last = s_.size();
  while (first < last && IsSpace(s_[first])) ++first;
  while (last > first && IsSpace(s_[last - 1])) --last;
  return FString(static_cast<int32>(last - first), s_.data() + first);
}

FString FString::ToUpper() const {
  FString r = *this;
  for (TCHAR& C : r.s_) C = Upper(C);
  return r;
}

bool FString::operator<(const FString& o) const {
  const size_t n = std::min(s_.size(), o.s_.size());
  for (size_t i = 0; i < n; ++i) {
    if (Lower(s_[i]) != Lower(o.s_[i])) return Lower(s_[i]) < Lower(o.s_[i]);
  }
  return s_.size() < o.s_.size();
}

// FString::PathAppend: one '/' between the parts unless either side has one.
FString operator/(const FString& a, const TCHAR* b) {
  FString r = a;
  const bool Slashed = !r.s_.empty() && IsSlash(r.s_.back());
  if (*b == 0) {
    if (!r.s_.empty() && !Slashed) r.s_ += u'/';
  } else {
    if (!r.s_.empty() && !Slashed && *b != u'/') r.s_ += u'/';
    r.s_ += b;
  }
  return r;
}
FString operator/(const FString& a, const FString& b) { return a / *b; }

// ---- FString::Printf ----

namespace StandIn {
namespace {
[[noreturn]] void BadFormat(const TCHAR* Format, const char* Why) {
  std::fprintf(stderr, "FString::Printf(\"%s\"): %s\n", FTCHARToUTF8(Format).Get(), Why);
  std::abort();
}
}  // namespace

FString FormatString(const TCHAR* Format, const FFormatArg* Args, size_t Count) {
  FString Out;
  size_t Next = 0;
  char Buffer[512];
  for (const TCHAR* p = Format; *p != 0; ++p) {
    if (*p != u'%') {
      Out += *p;
      continue;
    }
    if (*++p == u'%') {
      Out += u'%';
      continue;
    }
    std::string Spec = "%";
    bool LeftAlign = false;
    while (*p == u'-' || *p == u'+' || *p == u' ' || *p == u'#' || *p == u'0') {
      LeftAlign = LeftAlign || *p == u'-';
      Spec += static_cast<char>(*p++);
    }
    int Width = 0, Precision = -1;
    while (*p >= u'0' && *p <= u'9') {
      Width = Width * 10 + (*p - u'0');
      Spec += static_cast<char>(*p++);
    }
    if (*p == u'.') {
      Spec += static_cast<char>(*p++);
      Precision = 0;
      while (*p >= u'0' && *p <= u'9') {
        Precision = Precision * 10 + (*p - u'0');
        Spec += static_cast<char>(*p++);
      }
    }
    // The length: the argument came widened, but a size the specifier does not
    // read is what corrupts a real varargs call (an int64 to %d).
    std::string LengthMod;
    while (*p == u'h' || *p == u'l' || *p == u'z' || *p == u'j' || *p == u't' || *p == u'L') LengthMod += static_cast<char>(*p++);
    const TCHAR Conversion = *p;
    if (Conversion == 0) BadFormat(Format, "the format ends inside a specifier");
    if (Next >= Count) BadFormat(Format, "more specifiers than arguments");
    const FFormatArg& Arg = Args[Next++];
    const bool Integer = Arg.Kind == FFormatArg::EKind::Signed || Arg.Kind == FFormatArg::EKind::Unsigned;
    const bool Wide = LengthMod == "ll" || LengthMod == "j" || LengthMod == "z" || LengthMod == "t";
    switch (Conversion) {
      case u'd': case u'i': case u'u': case u'x': case u'X': case u'o': case u'c': {
        if (!Integer) BadFormat(Format, "an integer specifier without an integer argument");
        if (Conversion != u'c' && LengthMod != "l" && Wide != (Arg.Size == 8)) {
          BadFormat(Format, Arg.Size == 8 ? "a 64-bit argument to a specifier without ll" : "ll on an argument under 64 bits");
        }
        if (Conversion == u'c') {
          Out += static_cast<TCHAR>(Arg.Kind == FFormatArg::EKind::Signed ? Arg.Signed : static_cast<long long>(Arg.Unsigned));
          continue;
        }
        if (Conversion == u'd' || Conversion == u'i') {
          const long long Value = Arg.Kind == FFormatArg::EKind::Signed ? Arg.Signed : static_cast<long long>(Arg.Unsigned);
          std::snprintf(Buffer, sizeof Buffer, (Spec + "lld").c_str(), Value);
        } else {
          unsigned long long Value = Arg.Unsigned;
          if (Arg.Kind == FFormatArg::EKind::Signed) {
            // The argument's own width, as the varargs call would have read it.
            Value = static_cast<unsigned long long>(Arg.Signed);
            if (Arg.Size < 8) Value &= (1ULL << (8 * Arg.Size)) - 1;
          }
          std::snprintf(Buffer, sizeof Buffer, (Spec + "ll" + static_cast<char>(Conversion)).c_str(), Value);
        }
        Out += *FromUtf8(Buffer);
        continue;
      }
      case u'f': case u'F': case u'e': case u'E': case u'g': case u'G': case u'a': case u'A':
        if (Arg.Kind != FFormatArg::EKind::Double) BadFormat(Format, "a floating-point specifier without a float argument");
        std::snprintf(Buffer, sizeof Buffer, (Spec + static_cast<char>(Conversion)).c_str(), Arg.Double);
        Out += *FromUtf8(Buffer);
        continue;
      case u's': {
        if (Arg.Kind != FFormatArg::EKind::Text) BadFormat(Format, "%s without a TCHAR* argument (an FString goes in as *String)");
        FString Text = Arg.Text ? FString(Arg.Text) : FString(TEXT("(null)"));
        if (Precision >= 0 && Text.Len() > Precision) Text = FString(Precision, *Text);
        FString Pad;
        for (int32 i = Text.Len(); i < Width; ++i) Pad += u' ';
        Out += LeftAlign ? Text + Pad : Pad + Text;
        continue;
      }
      case u'p':
        std::snprintf(Buffer, sizeof Buffer, "%p", Arg.Kind == FFormatArg::EKind::Text ? static_cast<const void*>(Arg.Text) : Arg.Pointer);
        Out += *FromUtf8(Buffer);
        continue;
      default:
        BadFormat(Format, "an unknown specifier");
    }
  }
  if (Next != Count) BadFormat(Format, "more arguments than specifiers");
  return Out;
}
}  // namespace StandIn

// ---- UTF-16 <-> UTF-8 ----

FTCHARToUTF8::FTCHARToUTF8(const TCHAR* s) {
  for (; s != nullptr && *s != 0; ++s) {
    uint32_t Code = *s;
    if (Code >= 0xD800 && Code <= 0xDBFF && s[1] >= 0xDC00 && s[1] <= 0xDFFF) {
      Code = 0x10000 + ((Code - 0xD800) << 10) + (static_cast<uint32_t>(s[1]) - 0xDC00);
      ++s;
    } else if (Code >= 0xD800 && Code <= 0xDFFF) {
      Code = 0xFFFD;  // an unpaired surrogate
    }
    AppendUtf8(out_, Code);
  }
}

FUTF8ToTCHAR::FUTF8ToTCHAR(const ANSICHAR* s) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s ? s : "");
  while (*p != 0) {
    uint32_t Code = 0xFFFD;
    int Extra = 0;
    uint32_t Min = 0;
    if (*p < 0x80) {
      Code = *p;
    } else if ((*p & 0xE0) == 0xC0) {
      Code = *p & 0x1F, Extra = 1, Min = 0x80;
    } else if ((*p & 0xF0) == 0xE0) {
      Code = *p & 0x0F, Extra = 2, Min = 0x800;
    } else if ((*p & 0xF8) == 0xF0) {
      Code = *p & 0x07, Extra = 3, Min = 0x10000;
    }
    ++p;
    int Read = 0;
    while (Read < Extra && (*p & 0xC0) == 0x80) {
      Code = (Code << 6) | (*p++ & 0x3F);
      ++Read;
    }
    // A short or overlong sequence, a surrogate, or beyond U+10FFFF: one U+FFFD.
    if (Read < Extra || (Extra > 0 && Code < Min) || (Code >= 0xD800 && Code <= 0xDFFF) || Code > 0x10FFFF) Code = 0xFFFD;
    if (Code >= 0x10000) {
      out_ += static_cast<char16_t>(0xD800 + ((Code - 0x10000) >> 10));
      out_ += static_cast<char16_t>(0xDC00 + ((Code - 0x10000) & 0x3FF));
    } else {
      out_ += static_cast<char16_t>(Code);
    }
  }
}

// ---- FBase64 ----

namespace {
const char GBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

FString FBase64::Encode(const TArray<uint8>& Source) {
  std::string Out;
  const int32 N = Source.Num();
  for (int32 i = 0; i < N; i += 3) {
    const uint32_t B = (uint32_t(Source[i]) << 16) | (i + 1 < N ? uint32_t(Source[i + 1]) << 8 : 0) | (i + 2 < N ? Source[i + 2] : 0);
    Out += GBase64Alphabet[(B >> 18) & 63];
    Out += GBase64Alphabet[(B >> 12) & 63];
    Out += i + 1 < N ? GBase64Alphabet[(B >> 6) & 63] : '=';
    Out += i + 2 < N ? GBase64Alphabet[B & 63] : '=';
  }
  return FromUtf8(Out);
}

bool FBase64::Decode(const FString& Source, TArray<uint8>& OutDest) {
  OutDest.Empty();
  uint32_t Bits = 0;
  int Count = 0, Padding = 0;
  for (const TCHAR C : Source) {
    const char* Found = C < 128 && C != 0 ? std::strchr(GBase64Alphabet, static_cast<char>(C)) : nullptr;
    if (C == u'=') {
      ++Padding;
      continue;
    }
    if (Found == nullptr || Padding > 0) {
      OutDest.Empty();
      return false;
    }
    Bits = (Bits << 6) | static_cast<uint32_t>(Found - GBase64Alphabet);
    if (++Count == 4) {
      OutDest.Add(static_cast<uint8>(Bits >> 16));
      OutDest.Add(static_cast<uint8>(Bits >> 8));
      OutDest.Add(static_cast<uint8>(Bits));
      Bits = 0;
      Count = 0;
    }
  }
  if (Count == 1 || Padding > 2 || (Count == 0 && Padding > 0) || (Count > 0 && Count + Padding != 4)) {
    OutDest.Empty();
    return false;
  }
  if (Count >= 2) OutDest.Add(static_cast<uint8>(Bits >> (Count == 2 ? 4 : 10)));
  if (Count == 3) OutDest.Add(static_cast<uint8>(Bits >> 2));
  return true;
}
