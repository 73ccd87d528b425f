// A minimal stand-in for the few UnityEngine types the Unity layer uses, so the test
// command can compile clients/unity/Runtime/Unity and Samples~ without Unity. It
// checks compilation only: nothing here behaves like Unity.
using System;

namespace UnityEngine
{
    public class Object
    {
        public string name { get; set; } = "";
        public static void Destroy(Object obj) { }
        public static void DontDestroyOnLoad(Object target) { }
    }
    public class GameObject : Object { }
    public class Component : Object
    {
        public Transform transform => null;
        public GameObject gameObject => null;
    }
    public class Transform : Component
    {
        public Transform root => this;
        public Transform parent => null;
    }
    public class Behaviour : Component
    {
        public bool enabled { get; set; } = true;
        public bool isActiveAndEnabled => enabled;
    }
    public class MonoBehaviour : Behaviour { }

    public static class Debug
    {
        public static void Log(object message) { }
        public static void LogWarning(object message) { }
        public static void LogError(object message) { }
    }

    public static class Application
    {
        public static string streamingAssetsPath => "";
        public static string dataPath => "";
        public static string persistentDataPath => "";
        public static event Action quitting;
        internal static void Quit() => quitting?.Invoke();
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class SerializeField : Attribute { }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class TooltipAttribute : Attribute
    {
        public TooltipAttribute(string tooltip) { }
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class HeaderAttribute : Attribute
    {
        public HeaderAttribute(string header) { }
    }

    [AttributeUsage(AttributeTargets.Class)]
    public sealed class DisallowMultipleComponent : Attribute { }
}

namespace UnityEngine.Events
{
    public abstract class UnityEventBase { }

    [Serializable]
    public class UnityEvent : UnityEventBase
    {
        public void AddListener(UnityAction call) { }
        public void RemoveListener(UnityAction call) { }
        public void Invoke() { }
    }

    [Serializable]
    public class UnityEvent<T0> : UnityEventBase
    {
        public void AddListener(UnityAction<T0> call) { }
        public void RemoveListener(UnityAction<T0> call) { }
        public void Invoke(T0 arg0) { }
    }

    public delegate void UnityAction();
    public delegate void UnityAction<T0>(T0 arg0);
}
