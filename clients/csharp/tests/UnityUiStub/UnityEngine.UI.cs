// Stand-in for the UnityEngine.UI assembly (the com.unity.ugui package), apart from
// UnityEngine so the asmdef check sees an asmdef that forgets to reference it.
namespace UnityEngine.UI
{
    public class Text : MonoBehaviour
    {
        public virtual string text { get; set; } = "";
    }
}
